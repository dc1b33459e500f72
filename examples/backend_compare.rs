//! The exact planner on every solver backend this build has, with the structured formulation
//! and the plain slot formulation, on the bundled scenarios and prefixes of `fifty-models`.
//! Prints a Markdown table (docs/benchmarks.md, "Solver backends").
//!
//! ```sh
//! cargo run --release --features examples --example backend_compare -- [LIMIT_SECONDS] [REPEATS]
//! cargo run --release --features cbc,examples --example backend_compare -- 10 3   # with CBC
//! ```
//! Each cell is the minimum wall time over the repeats (the machine may be shared), the status
//! and, when not proven, the stop reason.

use std::time::{Duration, Instant};

use fleetplan::backend::{good_lp, GoodLp, Microlp};
use fleetplan::{ExactPlanner, Problem, Status};

fn scenario_text(name: &str) -> String {
    let path = format!("{}/scenarios/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A bundled scenario, or `fifty-models` cut to its first `count` components.
fn input(name: &str, prefix: Option<usize>) -> Problem {
    let mut value: serde_json::Value = serde_json::from_str(&scenario_text(name)).expect("scenario parses");
    if let (Some(count), Some(list)) = (prefix, value["InferenceComponents"].as_array_mut()) {
        list.truncate(count);
    }
    Problem::from_json(&value.to_string()).expect("scenario validates")
}

fn planners() -> Vec<(String, ExactPlanner)> {
    let mut list = Vec::new();
    for (model, plain) in [("structured", false), ("plain slots", true)] {
        let base = if plain { ExactPlanner::new().plain_slot_model() } else { ExactPlanner::new() };
        list.push((format!("{model}, microlp"), base.clone().backend(Microlp)));
        list.push((format!("{model}, good_lp/microlp"), base.clone().backend(GoodLp::new(good_lp::microlp))));
        #[cfg(feature = "cbc")]
        list.push((format!("{model}, good_lp/cbc"), base.clone().backend(GoodLp::new(fleetplan::backend::quiet_cbc))));
    }
    list
}

fn main() {
    let mut args = std::env::args().skip(1);
    let limit = Duration::from_secs_f64(args.next().and_then(|a| a.parse().ok()).unwrap_or(10.0));
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let inputs: Vec<(String, Problem)> = [
        ("seed-az-balance", None),
        ("seed-fallback-single-model", None),
        ("seed-multi-gpu-llm", None),
        ("fragmented-fleet", None),
        ("fifty-models", Some(10)),
        ("fifty-models", Some(25)),
        ("fifty-models", None),
    ]
    .into_iter()
    .map(|(name, prefix)| {
        let label = prefix.map_or(name.to_string(), |count| format!("{name} first {count}"));
        (label, input(name, prefix))
    })
    .collect();
    let planners = planners();
    print!("| input |");
    for (label, _) in &planners {
        print!(" {label} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(planners.len()));
    for (label, problem) in &inputs {
        print!("| {label} |");
        for (_, planner) in &planners {
            let mut best = Duration::MAX;
            let mut outcome = String::new();
            for _ in 0..repeats {
                let started = Instant::now();
                let plan = planner.clone().time_limit(limit).plan(problem);
                best = best.min(started.elapsed());
                outcome = match plan.status {
                    Status::Optimal => "Optimal".to_string(),
                    status => format!("{status:?} ({:?})", plan.stop_reason),
                };
            }
            print!(" {:.3} s {outcome} |", best.as_secs_f64());
        }
        println!();
    }
}
