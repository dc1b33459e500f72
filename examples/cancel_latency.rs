//! Cancellation latency of every engine: cancels from another thread after `AFTER_MS` and
//! prints how long `plan` took to return after the flag was set (median and max over `RUNS`),
//! and how many `fleetplan*` threads are alive right after it returns (from /proc/self/task).
//!
//! ```sh
//! cargo run --release --features examples --example cancel_latency -- RUNS AFTER_MS [SCENARIO|COPIES:COMPONENTS]
//! ```
//!
//! The input is a scenario file (default `scenarios/fifty-models.json`) or a generated endpoint
//! (`benches/support/large_scenario.rs`) with `COPIES:COMPONENTS`. No deadline is set.

#[path = "../benches/support/large_scenario.rs"]
mod large_scenario;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleetplan::{Consolidator, ExactPlanner, GreedyPlanner, Limits, Problem, Rebalancer, StopReason};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5);
    let after = Duration::from_millis(args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200));
    let input = args.get(2).cloned().unwrap_or_else(|| "scenarios/fifty-models.json".to_string());
    let problem = match input.split_once(':').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))) {
        Some((copies, components)) => Problem::new(&large_scenario::large_scenario(copies, components)),
        None => Problem::from_json(&std::fs::read_to_string(&input).expect("scenario file")),
    }
    .expect("valid scenario");
    type Engine = Box<dyn Fn(&Problem, Limits) -> StopReason>;
    let engines: Vec<(&str, Engine)> = vec![
        (
            "exact",
            Box::new(|p, l| {
                let (plan, stats) = ExactPlanner::new().limits(l).plan_with_stats(p);
                if std::env::var_os("CANCEL_STATS").is_some() {
                    eprint!("{stats}");
                }
                plan.stop_reason
            }),
        ),
        ("greedy", Box::new(|p, l| GreedyPlanner::new().limits(l).plan(p).stop_reason)),
        ("consolidate", Box::new(|p, l| Consolidator::new().limits(l).plan(p).stop_reason)),
        ("rebalance", Box::new(|p, l| Rebalancer::new().limits(l).plan(p).stop_reason)),
    ];
    for (name, engine) in &engines {
        let mut latencies = Vec::new();
        let mut threads_after = 0;
        let mut reasons = Vec::new();
        for _ in 0..runs {
            let flag = Arc::new(AtomicBool::new(false));
            let set_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
            let canceller = {
                let (flag, set_at) = (Arc::clone(&flag), Arc::clone(&set_at));
                std::thread::spawn(move || {
                    std::thread::sleep(after);
                    *set_at.lock().expect("lock") = Some(Instant::now());
                    flag.store(true, Ordering::SeqCst);
                })
            };
            let limits = Limits::new().time_limit(Duration::MAX).cancel_flag(Arc::clone(&flag));
            let reason = engine(&problem, limits);
            let returned = Instant::now();
            threads_after = threads_after.max(fleetplan_threads());
            canceller.join().expect("canceller");
            let set = set_at.lock().expect("lock").expect("flag set");
            // A run that finished before the flag was set has no latency to report.
            if reason == StopReason::Cancelled {
                latencies.push(returned.saturating_duration_since(set));
            }
            reasons.push(format!("{reason:?}"));
        }
        latencies.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        match (latencies.get(latencies.len() / 2), latencies.last()) {
            (Some(&median), Some(&max)) => println!(
                "{name:<12} cancelled {}/{runs}: median {:.1} ms, max {:.1} ms; fleetplan threads after return: {threads_after}",
                latencies.len(),
                ms(median),
                ms(max)
            ),
            _ => println!("{name:<12} finished before the cancellation in every run ({reasons:?})"),
        }
    }
}

/// Threads of this process whose name starts with `fleetplan`.
fn fleetplan_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .filter(|name| name.starts_with("fleetplan"))
                .count()
        })
        .unwrap_or(0)
}
