//! Rebalances a large generated fleet — 2,000 instances running 10,000 copies, most of them on
//! fallback hardware, with priority-1 capacity back — and prints the time taken, what the plan
//! changes, and whether it passes `verify_rebalance`:
//!
//! ```text
//! cargo run --release --features examples --example rebalance_large
//! cargo run --release --features examples --example rebalance_large -- 2000 --repeat 5
//! ```
//!
//! The first argument is the number of instances (5 copies each, 100 components). With
//! `--repeat N` the plan is made N times and the minimum and median times are printed;
//! `--time-limit-ms N` gives the planner a deadline; `--greedy-only` turns the target-directed
//! path off.

use std::time::Instant;

use fleetplan::engines::rebalance::{change_text, summarize};
use fleetplan::{verify_rebalance, Problem, Rebalancer, ScenarioBuilder};

/// Components in the generated scenario.
const COMPONENTS: usize = 100;
/// Copies per instance (each copy takes one accelerator of eight).
const COPIES_PER_INSTANCE: usize = 5;

/// `instances` instances over three AZs: 20 % priority 1 (p5), 30 % priority 2 (g6e), 50 %
/// priority 3 (g6), each holding five one-accelerator copies of five different components.
/// Priority-1 capacity: 10 reservation slots and 150 on-demand launches per AZ.
fn scenario(instances: usize) -> Problem {
    let azs = ["us-east-1a", "us-east-1b", "us-east-1c"];
    let mut builder = ScenarioBuilder::new(azs)
        .pool("ml.p5.48xlarge", 1)
        .pool("ml.g6e.48xlarge", 2)
        .pool("ml.g6.48xlarge", 3)
        .instance_limits(1, None);
    for az in azs {
        builder = builder.capacity("ml.p5.48xlarge", az, Some(150), 10);
    }
    let copies = instances * COPIES_PER_INSTANCE / COMPONENTS;
    for component in 0..COMPONENTS {
        let name = format!("ic-{component:03}");
        builder = builder.component(&name, copies as u32, 1, 4.0, 16_384);
        builder = match component % 4 {
            0 => builder.strategy(&name, fleetplan::PlacementStrategy::Binpack),
            1 => builder.max_imbalance(&name, 1),
            2 => builder.strategy(&name, fleetplan::PlacementStrategy::Binpack).max_imbalance(&name, 2),
            _ => builder,
        };
    }
    for index in 0..instances {
        let id = format!("i-{index:05}");
        let instance_type = match index % 10 {
            0 | 1 => "ml.p5.48xlarge",
            2..=4 => "ml.g6e.48xlarge",
            _ => "ml.g6.48xlarge",
        };
        builder = builder.fleet_instance(&id, instance_type, azs[index % azs.len()], false);
        for slot in 0..COPIES_PER_INSTANCE {
            let component = (index * COPIES_PER_INSTANCE + slot) % COMPONENTS;
            builder = builder.fleet_copies(&format!("ic-{component:03}"), &id, 1);
        }
    }
    let mut scenario = builder.build().unwrap();
    let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
    scaling.scale_in_policy = Some(fleetplan::ScaleInPolicySpec {
        strategy: Some(fleetplan::ScaleInStrategy::Consolidation),
        cooldown_in_minutes: None,
        maximum_step_size: Some(10),
    });
    Problem::new(&scenario).expect("generated scenario is valid")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let instances: usize = args.first().and_then(|arg| arg.parse().ok()).unwrap_or(2_000);
    let repeat: usize = args
        .iter()
        .position(|arg| arg == "--repeat")
        .and_then(|index| args.get(index + 1))
        .and_then(|count| count.parse().ok())
        .unwrap_or(1)
        .max(1);
    let problem = scenario(instances);
    let copies: u64 = problem.existing_copies_per_component().iter().sum();
    println!("fleet: {} instances, {copies} copies, {} components", problem.fleet().len(), COMPONENTS);

    let time_limit: Option<u64> = args
        .iter()
        .position(|arg| arg == "--time-limit-ms")
        .and_then(|index| args.get(index + 1))
        .and_then(|ms| ms.parse().ok());
    let greedy_only = args.iter().any(|arg| arg == "--greedy-only");
    let path_only = args.iter().any(|arg| arg == "--path-only");
    // `--target-up-to N`: the target-directed path on fleets of at most N instances.
    let target_up_to: Option<usize> = args
        .iter()
        .position(|arg| arg == "--target-up-to")
        .and_then(|index| args.get(index + 1))
        .and_then(|count| count.parse().ok());
    let mut times = Vec::with_capacity(repeat);
    let mut plan = None;
    for _ in 0..repeat {
        let started = Instant::now();
        let mut rebalancer = Rebalancer::new().self_check(false).target_directed(!greedy_only).greedy_units(!path_only);
        if let Some(instances) = target_up_to {
            rebalancer = rebalancer.target_directed_up_to(instances);
        }
        if let Some(ms) = time_limit {
            rebalancer = rebalancer.time_limit(std::time::Duration::from_millis(ms));
        }
        let (made, stats) = rebalancer.plan_with_stats(&problem);
        for phase in &stats.phases {
            println!("  phase {}: {:.0} ms", phase.name, phase.elapsed.as_secs_f64() * 1e3);
        }
        times.push(started.elapsed().as_secs_f64() * 1e3);
        plan = Some(made);
    }
    let Some(plan) = plan else { return };
    times.sort_by(f64::total_cmp);
    println!(
        "rebalance: {:.0} ms (min of {repeat}), median {:.0} ms",
        times.first().copied().unwrap_or(0.0),
        times.get(times.len() / 2).copied().unwrap_or(0.0)
    );
    let summary = summarize(&problem, &plan);
    println!(
        "plan: {} steps, {} launched, {} released, {} moves; stop: {:?}",
        plan.steps.len(),
        plan.launches().count(),
        plan.released().count(),
        plan.move_count(),
        plan.stop_reason
    );
    println!("before: {:?} cost {:.2}", summary.start.instances_by_priority, summary.start.cost());
    println!("after:  {:?} cost {:.2}", summary.end.instances_by_priority, summary.end.cost());
    println!("change: {}", change_text(&summary.start, &summary.end));
    let started = Instant::now();
    let violations = verify_rebalance(&problem, &plan);
    println!("verify_rebalance: {} violations ({:.0} ms)", violations.len(), started.elapsed().as_secs_f64() * 1e3);
    for violation in violations.iter().take(5) {
        println!("  {violation}");
    }
}
