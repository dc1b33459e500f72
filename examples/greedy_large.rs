//! Plans a large generated scenario (or a scenario file) with the greedy planner and prints
//! the size, the time taken and the objective. Used to measure peak memory:
//!
//! ```text
//! cargo build --release --example greedy_large
//! /usr/bin/time -v target/release/examples/greedy_large 100000 500
//! target/release/examples/greedy_large scenarios/fifty-models.json
//! ```

#[path = "../benches/support/large_scenario.rs"]
mod large_scenario;

use std::time::Instant;

use fleetplan::{plan_greedy, verify, Problem};

/// User + system CPU seconds of this process (Linux), if readable.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    // Clock ticks are 100 per second on Linux.
    Some((user + system) / 100.0)
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
    // `--repeat N` plans N times and reports the mean wall and CPU time (this process's user +
    // system time from /proc/self/stat), so a busy shared machine can be told apart.
    let repeat: u32 = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    let cpu_before = cpu_seconds();
    let start = Instant::now();
    let mut plan = plan_greedy(&problem);
    for _ in 1..repeat {
        plan = plan_greedy(&problem);
    }
    let elapsed = start.elapsed() / repeat;
    let cpu = cpu_seconds().zip(cpu_before).map(|(after, before)| (after - before) / f64::from(repeat));
    let wanted: u64 = problem.components().iter().map(|c| u64::from(c.copy_count)).sum();
    println!(
        "components {} copies wanted {} placed {} launches {} actions {} in {:.1} ms wall, {} ms CPU (mean of {repeat})",
        problem.components().len(),
        wanted,
        plan.objective.placed_copies,
        plan.launches(),
        plan.actions.len(),
        elapsed.as_secs_f64() * 1000.0,
        cpu.map_or("?".to_string(), |seconds| format!("{:.1}", seconds * 1000.0)),
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
