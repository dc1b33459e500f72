//! Runs the exact planner once on a scenario file with optional limits and prints status,
//! stop reason, objective, bound and wall time (a diagnostic for slow cases).
//!
//! ```sh
//! cargo run --release --features examples --example exact_once -- SCENARIO [--nodes N] [--ms N]
//! ```

use std::time::{Duration, Instant};

use fleetplan::{ExactPlanner, Problem};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: exact_once SCENARIO [--nodes N] [--ms N]");
        std::process::exit(2);
    };
    let mut planner = ExactPlanner::new();
    while let Some(flag) = args.next() {
        let value: u64 = args.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        match flag.as_str() {
            "--nodes" => planner = planner.node_limit(value),
            "--ms" => planner = planner.time_limit(Duration::from_millis(value)),
            other => eprintln!("ignored: {other}"),
        }
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let problem = Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let started = Instant::now();
    let plan = planner.plan(&problem);
    println!(
        "{:.3} s {:?} {:?} objective {} bound {}",
        started.elapsed().as_secs_f64(),
        plan.status,
        plan.stop_reason,
        serde_json::to_string(&plan.objective).unwrap_or_default(),
        plan.bound.as_ref().map(|b| serde_json::to_string(b).unwrap_or_default()).unwrap_or_default()
    );
}
