//! Greedy planner at 1k, 10k and 100k copies (hundreds of components, 3 AZs, 5 pool types,
//! thousands of instances). Scenarios are generated in code (`support/large_scenario.rs`).
//!
//! ```text
//! cargo bench --bench greedy
//! ```

#[path = "support/large_scenario.rs"]
mod large_scenario;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fleetplan::{plan_greedy, Problem};

fn greedy(c: &mut Criterion) {
    let mut group = c.benchmark_group("greedy");
    for (copies, components) in [(1_000u32, 100u32), (10_000, 250), (100_000, 500)] {
        let problem = Problem::new(&large_scenario::large_scenario(copies, components)).expect("valid scenario");
        group.throughput(Throughput::Elements(u64::from(copies)));
        if copies >= 100_000 {
            group.sample_size(10).measurement_time(Duration::from_secs(15)).warm_up_time(Duration::from_secs(2));
        } else {
            group.sample_size(20).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
        }
        group.bench_with_input(BenchmarkId::new("copies", copies), &problem, |b, problem| {
            b.iter(|| plan_greedy(black_box(problem)))
        });
    }
    group.finish();
}

criterion_group!(benches, greedy);
criterion_main!(benches);
