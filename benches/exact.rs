//! Exact planner benchmarks: the structured formulation beside the plain slot formulation,
//! both through microlp, on the same inputs. See docs/benchmarks.md ("## Exact planner").
//!
//! `cargo bench --bench exact` runs the criterion benchmarks (inputs each formulation proves
//! optimal within seconds) and first prints one-shot runs under a time limit for the inputs
//! where a formulation does not finish (status, stop reason and bound say how far it got).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use fleetplan::{ExactPlanner, Problem};

#[path = "support/bpp.rs"]
mod bpp;
#[path = "support/vbp.rs"]
mod vbp;

fn scenario_text(name: &str) -> String {
    let path = format!("{}/scenarios/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn load(name: &str) -> Problem {
    Problem::from_json(&scenario_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `fifty-models` cut to its first `count` components (sizes between the seeds and fifty).
fn first_components(count: usize) -> Problem {
    let mut value: serde_json::Value =
        serde_json::from_str(&scenario_text("fifty-models")).expect("fifty-models parses");
    if let Some(list) = value["InferenceComponents"].as_array_mut() {
        list.truncate(count);
    }
    Problem::from_json(&value.to_string()).expect("a prefix of fifty-models validates")
}

/// Runs `planner` on `problem` `runs` times and prints the status and the min and median wall
/// time (the machine is shared, so one run says little).
fn one_shot(label: &str, problem: &Problem, planner: ExactPlanner, runs: usize) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let plan = planner.plan(problem);
        times.push(started.elapsed());
        last = Some(plan);
    }
    times.sort();
    let Some(plan) = last else { return };
    let objective = serde_json::to_string(&plan.objective).unwrap_or_default();
    let bound = plan.bound.as_ref().map(|b| serde_json::to_string(b).unwrap_or_default());
    println!(
        "one-shot {label}: min {:?} median {:?} over {} runs; {:?} {:?} objective {objective} bound {bound:?}",
        times[0],
        times[times.len() / 2],
        times.len(),
        plan.status,
        plan.stop_reason
    );
}

fn benches(c: &mut Criterion) {
    let limit = Duration::from_secs(10);
    one_shot(
        "exact fifty-models (1 s limit)",
        &load("fifty-models"),
        ExactPlanner::new().time_limit(Duration::from_secs(1)),
        3,
    );
    one_shot("exact fifty-models (10 s limit)", &load("fifty-models"), ExactPlanner::new().time_limit(limit), 3);
    for count in [10, 25] {
        one_shot(
            &format!("exact fifty-models-first-{count} (10 s limit)"),
            &first_components(count),
            ExactPlanner::new().time_limit(limit),
            3,
        );
    }
    one_shot(
        "slot seed-multi-gpu-llm (10 s limit)",
        &load("seed-multi-gpu-llm"),
        ExactPlanner::new().plain_slot_model().time_limit(limit),
        1,
    );
    one_shot(
        "slot fifty-models-first-5 (10 s limit)",
        &first_components(5),
        ExactPlanner::new().plain_slot_model().time_limit(limit),
        1,
    );

    let mut group = c.benchmark_group("exact");
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    let inputs: Vec<(String, Problem)> =
        ["seed-az-balance", "seed-fallback-single-model", "seed-multi-gpu-llm", "fragmented-fleet"]
            .iter()
            .map(|name| (name.to_string(), load(name)))
            .chain([5, 10].map(|count| (format!("fifty-models-first-{count}"), first_components(count))))
            .collect();
    for (name, problem) in &inputs {
        group.bench_function(format!("structured/{name}"), |b| b.iter(|| ExactPlanner::new().plan(black_box(problem))));
    }
    for (name, problem) in inputs.iter().filter(|(name, _)| {
        ["seed-az-balance", "seed-fallback-single-model", "fragmented-fleet"].contains(&name.as_str())
    }) {
        group.bench_function(format!("plain-slot/{name}"), |b| {
            b.iter(|| ExactPlanner::new().plain_slot_model().plan(black_box(problem)))
        });
    }
    group.finish();
}

/// Literature packing instances the exact planner proves optimal in well under a second (the
/// whole families run through `examples/bpp_run.rs` and `examples/vbp_run.rs`, docs/benchmarks.md).
fn literature(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let one_dimensional = ["Falkenauer_u120_00", "Falkenauer_t60_01", "Scholl_N1W1B1R0"].map(|name| {
        let path = root.join(format!("benches/data/bpp/{name}.txt"));
        let instance = bpp::BppInstance::read(&path).unwrap_or_else(|e| panic!("{e}"));
        (name.to_string(), instance.scenario().unwrap_or_else(|e| panic!("{e}")))
    });
    let vector = ["Panigrahy_class1_40_3_0", "Triplet_classF_60_3_0"].map(|name| {
        let path = root.join(format!("benches/data/vbp/{name}.vbp"));
        let instance = vbp::VbpInstance::read(&path).unwrap_or_else(|e| panic!("{e}"));
        (name.to_string(), instance.scenario().unwrap_or_else(|e| panic!("{e}")))
    });
    let mut group = c.benchmark_group("literature");
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(3));
    for (name, scenario) in one_dimensional.iter().chain(&vector) {
        let problem = Problem::new(scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(name.as_str(), |b| b.iter(|| ExactPlanner::new().plan(black_box(&problem))));
    }
    group.finish();
}

criterion_group!(exact, benches, literature);
criterion_main!(exact);
