//! A long simulation of a large fleet: 1,000 ticks of a ~200-instance fleet (40 components,
//! 800 copies of two accelerators each, three AZs, three pool tiers), with the greedy planner,
//! scale events every few ticks, ICE spells on priority 1, one AZ outage, consolidation every
//! 50 ticks and rebalancing every 100 (node limit 50 per rebalance). Prints the time taken and
//! whether every invariant held:
//!
//! ```text
//! nice cargo run --release --features examples --example simulate_large
//! nice cargo run --release --features examples --example simulate_large -- 1000 --consolidate-every 50 --rebalance-every 100 \
//!     --rebalance-node-limit 50
//! ```
//!
//! `--rebalance-node-limit 0` lifts the rebalancer's node limit (docs/simulate.md has the times).
//!
//! The first argument is the number of ticks. The script is generated deterministically (no
//! randomness source), so two runs print the same record.

use std::time::Instant;

use fleetplan::simulate::{Script, Simulator};
use fleetplan::LaunchFailure;
use fleetplan::{ScaleInPolicySpec, ScenarioBuilder};

/// Components in the generated scenario.
const COMPONENTS: u32 = 40;
/// Copies per component at the start (two accelerators each: four per eight-accelerator instance).
const COPIES: u32 = 20;
const AZS: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
const TYPES: [&str; 3] = ["ml.p5.48xlarge", "ml.g6e.48xlarge", "ml.g6.48xlarge"];

/// A deterministic pseudo-random sequence (a linear congruential generator), so the script is
/// the same on every run.
struct Sequence(u64);

impl Sequence {
    fn next(&mut self, below: u32) -> u32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % u64::from(below.max(1))) as u32
    }
}

fn script(ticks: u32, consolidate_every: u32, rebalance_every: u32) -> Script {
    let mut builder = ScenarioBuilder::new(AZS).instance_limits(3, Some(400));
    for (priority, instance_type) in TYPES.iter().enumerate() {
        builder = builder.pool(instance_type, priority as u8 + 1);
    }
    for component in 0..COMPONENTS {
        let name = format!("ic-{component:02}");
        builder = builder.component(&name, COPIES, 2, 8.0, 65_536);
        builder = match component % 3 {
            0 => builder.max_imbalance(&name, 1),
            1 => builder.strategy(&name, fleetplan::PlacementStrategy::Binpack).max_imbalance(&name, 2),
            _ => builder,
        };
    }
    let mut scenario = builder.build().unwrap();
    scenario.endpoint.endpoint_name = "large".to_string();
    let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
    scaling.scale_in_policy = Some(ScaleInPolicySpec {
        strategy: Some(fleetplan::ScaleInStrategy::Consolidation),
        cooldown_in_minutes: None,
        maximum_step_size: Some(10),
    });
    let mut script = Script::new(scenario, ticks).consolidate_every(consolidate_every).rebalance_every(rebalance_every);
    let mut sequence = Sequence(42);
    // Scale events: every 5 ticks one component moves between 10 and 30 copies.
    for tick in (5..ticks).step_by(5) {
        let component = sequence.next(COMPONENTS);
        let copies = 10 + sequence.next(21);
        script = script.scale(tick, &format!("ic-{component:02}"), copies);
    }
    // ICE spells on priority 1: every 100 ticks, one AZ's p5 fails launches for 30 ticks.
    for start in (50..ticks).step_by(100) {
        let az = AZS[sequence.next(3) as usize];
        script =
            script.launch_failure(start, (start + 30).min(ticks), TYPES[0], az, LaunchFailure::InsufficientCapacity);
    }
    // p5 capacity per AZ: limited, shrinking and growing over time.
    for tick in (0..ticks).step_by(200) {
        for az in AZS {
            script = script.cloud_capacity(tick, TYPES[0], az, Some(20 + sequence.next(40)));
        }
    }
    // One AZ outage in the middle of the run.
    if ticks >= 20 {
        let from = ticks / 2;
        script = script.az_outage(from, (from + 20).min(ticks), AZS[2]);
    }
    script
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ticks: u32 = args.first().and_then(|arg| arg.parse().ok()).unwrap_or(1_000);
    let option = |name: &str, default: u32| -> u32 {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|index| args.get(index + 1))
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let mut script = script(ticks, option("--consolidate-every", 50), option("--rebalance-every", 100));
    let rebalance_nodes = option("--rebalance-node-limit", 50);
    if rebalance_nodes > 0 {
        script = script.rebalance_node_limit(u64::from(rebalance_nodes));
    }
    let started = Instant::now();
    let (simulation, stats) = match Simulator::new().run_with_stats(&script) {
        Ok(result) => result,
        Err(error) => {
            eprintln!("invalid script: {error}");
            std::process::exit(2);
        }
    };
    let elapsed = started.elapsed();
    let peak = simulation.ticks.iter().map(|tick| tick.instances).max().unwrap_or(0);
    let mean = simulation.ticks.iter().map(|tick| u64::from(tick.instances)).sum::<u64>()
        / simulation.ticks.len().max(1) as u64;
    println!(
        "{} ticks, {} script events, fleet of {mean} instances on average ({peak} at most): {:.3} s \
         ({:.2} ms per tick; {} engine calls)",
        simulation.ticks.len(),
        script.cloud_capacity.len()
            + script.scale_events.len()
            + script.launch_failures.len()
            + script.az_outages.len(),
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e3 / simulation.ticks.len().max(1) as f64,
        stats.solves
    );
    if let Some(last) = simulation.ticks.last() {
        println!(
            "last tick: instances by priority {:?}, largest AZ imbalance {}, {} unplaced",
            last.instances_by_priority,
            last.max_az_imbalance(),
            last.unplaced_copies
        );
    }
    if simulation.failures.is_empty() {
        println!("invariant checks passed: {} ticks", simulation.ticks.len());
    } else {
        println!("invariant checks FAILED: {} failures", simulation.failures.len());
        for failure in simulation.failures.iter().take(10) {
            println!("  tick {} {:?}: {}", failure.tick, failure.check, failure.message);
        }
        std::process::exit(1);
    }
}
