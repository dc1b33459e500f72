//! The exact planner on a large generated endpoint (`benches/support/large_scenario.rs`): greedy's
//! objective, then the exact planner's status, stop reason, objective, bound and wall time, for the
//! scale rows of docs/benchmarks.md (peak memory with `/usr/bin/time -f "%M KB"`).
//!
//! ```sh
//! cargo run --release --features examples --example exact_large -- COPIES COMPONENTS LIMIT_MS [MODE]
//! ```
//!
//! MODE `no-lns` turns the large-neighbourhood phase off; `lns-only` skips the search (its
//! master size cap at zero), so the phase alone improves greedy's plan.

#[path = "../benches/support/large_scenario.rs"]
mod large_scenario;

use std::time::{Duration, Instant};

use fleetplan::{plan_greedy, ExactPlanner, Objective, Problem};

fn main() {
    let numbers: Vec<u64> = std::env::args().skip(1).filter_map(|arg| arg.parse().ok()).collect();
    let mode = std::env::args().nth(4).unwrap_or_default();
    let [copies, components, limit_ms] = numbers[..] else {
        eprintln!("usage: exact_large COPIES COMPONENTS LIMIT_MS");
        std::process::exit(2);
    };
    let scenario = large_scenario::large_scenario(copies as u32, components as u32);
    let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("generated scenario: {e}"));
    let started = Instant::now();
    let greedy = plan_greedy(&problem);
    println!("greedy  {:.3} s  {}", started.elapsed().as_secs_f64(), describe(&greedy.objective));
    let started = Instant::now();
    let mut planner = ExactPlanner::new().time_limit(Duration::from_millis(limit_ms));
    match mode.as_str() {
        "no-lns" => planner = planner.large_neighbourhood(false),
        "lns-only" => planner = planner.max_master_variables(0),
        _ => {}
    }
    let (plan, stats) = planner.plan_with_stats(&problem);
    println!(
        "exact   {:.3} s  {:?} ({:?})  {}",
        started.elapsed().as_secs_f64(),
        plan.status,
        plan.stop_reason,
        describe(&plan.objective)
    );
    if let Some(bound) = &plan.bound {
        println!("bound   {}", describe(bound));
    }
    print!("{stats}");
}

/// `placed P excess E instances {priority: count} cost C`.
fn describe(objective: &Objective) -> String {
    format!(
        "placed {} excess {} instances {:?} cost {:.3}",
        objective.placed_copies,
        objective.balance_excess,
        objective.instances_by_priority,
        objective.cost_micros as f64 / 1e6
    )
}
