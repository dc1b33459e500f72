//! Plans a large generated scenario (or a scenario file) with the greedy planner and prints
//! the size, the time taken and the objective. Used to measure time and peak memory:
//!
//! ```text
//! cargo build --release --features examples --example greedy_large
//! target/release/examples/greedy_large 10000 250 --repeat 30
//! /usr/bin/time -v target/release/examples/greedy_large 100000 500
//! target/release/examples/greedy_large scenarios/fifty-models.json
//! ```
//!
//! With `--repeat N` each plan is timed on its own and the minimum, median and mean are
//! printed: on a shared machine the minimum is the best estimate of the planner's own cost
//! (single-threaded, so wall time is CPU time when the core is not taken away; no `unsafe`
//! thread-CPU clock here, in keeping with the crate's `forbid(unsafe_code)`).

#[path = "../benches/support/large_scenario.rs"]
mod large_scenario;

use std::time::Instant;

use fleetplan::{plan_greedy, verify, Problem};

/// Milliseconds of a nanosecond count, for printing.
fn millis(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let problem = match args.first() {
        Some(path) if path.ends_with(".json") => {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
        }
        first => {
            let copies = first.and_then(|a| a.parse().ok()).unwrap_or(100_000);
            let components = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(500);
            Problem::new(&large_scenario::large_scenario(copies, components)).expect("generated scenario is valid")
        }
    };
    // `--repeat N` plans N times and reports the time per plan (min, median, mean), so a busy
    // shared machine can be told apart.
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    let start = Instant::now();
    let mut cpu_nanos: Vec<u64> = Vec::with_capacity(repeat);
    let mut plan = None;
    for _ in 0..repeat {
        let before = Instant::now();
        plan = Some(plan_greedy(&problem));
        cpu_nanos.push(u64::try_from(before.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    let plan = plan.expect("planned at least once");
    let elapsed = start.elapsed() / u32::try_from(repeat).unwrap_or(u32::MAX);
    cpu_nanos.sort_unstable();
    let cpu = if cpu_nanos.is_empty() {
        "time ?".to_string()
    } else {
        let mean = cpu_nanos.iter().sum::<u64>() / cpu_nanos.len() as u64;
        format!(
            "per plan min {:.1} / median {:.1} / mean {:.1} ms",
            millis(cpu_nanos[0]),
            millis(cpu_nanos[cpu_nanos.len() / 2]),
            millis(mean)
        )
    };
    let wanted: u64 = problem.components().iter().map(|c| u64::from(c.copy_count)).sum();
    println!(
        "components {} copies wanted {} placed {} launches {} actions {}: {:.1} ms wall (mean), {cpu} over {repeat} plans",
        problem.components().len(),
        wanted,
        plan.objective.placed_copies,
        plan.launches(),
        plan.actions.len(),
        elapsed.as_secs_f64() * 1000.0,
    );
    println!("objective {}", serde_json::to_string(&plan.objective).unwrap_or_default());
    if args.iter().any(|a| a == "--verify") {
        let violations = verify(&problem, &plan);
        println!("violations {}", violations.len());
        for v in violations.iter().take(10) {
            println!("  {v}");
        }
    }
    if args.iter().any(|a| a == "--json") {
        println!("{}", plan.to_json());
    }
}
