//! How far `rebalance` brings fleets back to preferred hardware (docs/rebalance.md,
//! "Convergence"). Each generated fleet is built by planning while the priority-1 type (and in a
//! third of the cases the priority-2 type too) is blocked — capacity 0, or a live
//! `InsufficientCapacity` event — in two scale-out rounds, then the block is lifted and some
//! instances are marked draining. 3–4 AZs, SPREAD and BINPACK components, some balanced,
//! `MaximumStepSize` 1–5.
//!
//! Metric: of the fallback instances (priority > 1) the optimum can do without (fallback count
//! of the start fleet minus that of the exact planner's best fleet for the same copies), the
//! share the rebalance removes; and the step violations `verify_rebalance` finds.
//!
//! ```text
//! cargo run --release --features examples --example rebalance_convergence -- 60
//! ```
//!
//! The argument is the number of fleets (seeds 1..=N). Both the greedy unit search alone
//! (`target_directed(false)`, the planner before the target-directed path) and the default
//! planner are measured.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleetplan::engines::rebalance::best_reachable;
use fleetplan::{
    objective, plan_greedy, verify_rebalance, FinalFleet, InstanceTypeSpec, Objective, Problem, Rebalancer, Scenario,
    ScenarioBuilder,
};

/// SplitMix64: a small deterministic generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn instance_type(name: &str, accelerators: u32, price: f64) -> InstanceTypeSpec {
    InstanceTypeSpec {
        instance_type: name.into(),
        accelerator_count: accelerators,
        accelerator_memory_gib: 24.0,
        v_cpu_count: 96.0,
        memory_in_mb: 393_216.0,
        hourly_price: Some(price),
    }
}

/// One running instance: id, type, AZ, copies per component name.
type Running = (String, String, String, BTreeMap<String, u32>);

/// What a generated case is made of.
struct Case {
    azs: Vec<String>,
    /// (type name, accelerators, price, priority).
    types: Vec<(String, u32, f64, u8)>,
    /// (name, final copies, accelerators, SPREAD, MaxImbalance).
    components: Vec<(String, u32, u32, bool, Option<u32>)>,
    step_size: u32,
}

/// The scenario with `copies_share` percent of each component's copies, the given fleet and
/// `blocked` types (priority ≤ blocked) unobtainable, by capacity 0 or by a live event.
fn scenario(case: &Case, fleet: &[Running], copies_share: u32, blocked: u8, by_event: bool) -> Scenario {
    let mut builder = ScenarioBuilder::new(case.azs.iter().map(String::as_str)).instance_limits(1, None);
    for (name, accelerators, price, priority) in &case.types {
        builder = builder.instance_type(instance_type(name, *accelerators, *price)).pool(name, *priority);
    }
    for (name, copies, accelerators, spread, max_imbalance) in &case.components {
        let copies = (copies * copies_share).div_ceil(100).max(1);
        builder = builder.component(name, copies, *accelerators, 1.0, 2048);
        if !spread {
            builder = builder.strategy(name, fleetplan::PlacementStrategy::Binpack);
        }
        if let Some(max) = max_imbalance {
            builder = builder.max_imbalance(name, *max);
        }
    }
    for (name, _, _, priority) in &case.types {
        if *priority <= blocked && !by_event {
            for az in &case.azs {
                builder = builder.capacity(name, az, Some(0), 0);
            }
        }
    }
    for (id, type_name, az, copies) in fleet {
        builder = builder.fleet_instance(id, type_name, az, false);
        for (component, &count) in copies {
            builder = builder.fleet_copies(component, id, count);
        }
    }
    let mut scenario = builder.build().expect("the convergence cases are valid");
    if by_event && blocked > 0 {
        scenario.now = Some(1_000);
        for (name, _, _, priority) in &case.types {
            if *priority <= blocked {
                for az in &case.azs {
                    scenario.capacity_events.push(fleetplan::CapacityEvent {
                        instance_type: name.clone(),
                        availability_zone: az.clone(),
                        event: fleetplan::CapacityEventKind::InsufficientCapacity,
                        time: 990,
                    });
                }
            }
        }
    }
    let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
    scaling.scale_in_policy = Some(fleetplan::ScaleInPolicySpec {
        strategy: Some(fleetplan::ScaleInStrategy::Consolidation),
        cooldown_in_minutes: None,
        maximum_step_size: Some(case.step_size),
    });
    scenario
}

/// Plans the scenario greedily and returns the fleet it leads to (launches renamed `i-N`).
fn grow(scenario: &Scenario, next_id: &mut usize) -> Option<Vec<Running>> {
    let problem = Problem::new(scenario).ok()?;
    let plan = plan_greedy(&problem);
    let (fleet, _) = FinalFleet::apply(&problem, &plan.actions);
    let mut running = Vec::new();
    for instance in &fleet.instances {
        let id = if instance.existing.is_some() {
            instance.id.clone()
        } else {
            *next_id += 1;
            format!("i-{next_id:04}")
        };
        let copies = instance
            .copies
            .iter()
            .filter(|&(_, &count)| count > 0)
            .map(|(&component, &count)| (problem.components()[component].name.clone(), count))
            .collect();
        running.push((
            id,
            problem.instance_types()[instance.type_index].name.clone(),
            problem.azs()[instance.az_index].clone(),
            copies,
        ));
    }
    Some(running)
}

/// A generated fleet on fallback hardware with the block lifted; `None` when generation fails.
fn generate(seed: u64) -> Option<Problem> {
    let mut rng = Rng(seed.wrapping_mul(7919));
    let zones = 3 + rng.below(2) as usize;
    let azs: Vec<String> = (0..zones).map(|index| format!("az-{}", (b'a' + index as u8) as char)).collect();
    // Priority 1 is the large preferred type; fallbacks are smaller or older.
    let templates: [&[(u32, f64)]; 3] =
        [&[(8, 30.0), (4, 18.0), (8, 26.0)], &[(8, 40.0), (8, 32.0), (4, 14.0)], &[(4, 12.0), (8, 26.0), (2, 7.0)]];
    let template = templates[rng.below(3) as usize];
    let types = template
        .iter()
        .enumerate()
        .map(|(index, &(accelerators, price))| (format!("t-p{}", index + 1), accelerators, price, index as u8 + 1))
        .collect();
    let components = (0..3 + rng.below(4))
        .map(|index| {
            let accelerators = [1, 1, 2, 4][rng.below(4) as usize];
            let copies = 2 + rng.below(11) as u32;
            let spread = rng.chance(50);
            let max_imbalance = match rng.below(3) {
                0 => None,
                1 => Some(1),
                _ => Some(2),
            };
            (format!("ic-{index}"), copies, accelerators, spread, max_imbalance)
        })
        .collect();
    let case = Case { azs, types, components, step_size: 1 + rng.below(5) as u32 };
    let blocked = if rng.chance(33) { 2 } else { 1 };
    let by_event = rng.chance(40);
    let mut next_id = 0;
    // Two scale-out rounds under the block: half the copies, then all of them.
    let half = grow(&scenario(&case, &[], 50, blocked, by_event), &mut next_id)?;
    let mut fleet = grow(&scenario(&case, &half, 100, blocked, by_event), &mut next_id)?;
    fleet.retain(|(_, _, _, copies)| !copies.is_empty());
    let mut lifted = scenario(&case, &fleet, 100, 0, false);
    // Some instances draining (at most a fifth).
    for instance in &mut lifted.fleet.instances {
        if rng.chance(12) {
            instance.state = Some(fleetplan::InstanceState::Draining);
        }
    }
    Problem::new(&lifted).ok()
}

fn fallback(objective: &Objective) -> i64 {
    (2..=6u8).map(|priority| i64::from(objective.instances_of_priority(priority))).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(seed) = args.iter().position(|arg| arg == "--show").and_then(|index| args.get(index + 1)) {
        // One fleet in detail: the target-directed path alone, as a table.
        let Some(problem) = seed.parse().ok().and_then(generate) else { return };
        let plan = Rebalancer::new().self_check(false).greedy_units(false).plan(&problem);
        println!("{}", fleetplan::engines::rebalance::rebalance_table(&problem, &plan, None));
        for instance in problem.fleet() {
            println!(
                "{} {} {} draining={} {:?}",
                instance.id,
                problem.instance_types()[instance.type_index].name,
                problem.azs()[instance.az_index],
                instance.draining,
                instance.copies
            );
        }
        for component in problem.components() {
            println!("{} {:?} {:?}", component.name, component.strategy, component.max_imbalance);
        }
        return;
    }
    let fleets: u64 = args.first().and_then(|arg| arg.parse().ok()).unwrap_or(60);
    let mut avoidable_total = 0i64;
    let mut removed = [0i64; 3];
    let mut violations = [0usize; 3];
    let mut steps = [0usize; 3];
    let mut time = [Duration::ZERO; 3];
    let mut cases = 0;
    for seed in 1..=fleets {
        let Some(problem) = generate(seed) else { continue };
        let start = objective(&problem, &FinalFleet::apply(&problem, &[]).0);
        let best = best_reachable(&problem, Duration::from_secs(5));
        let avoidable = (fallback(&start) - fallback(&best.objective)).max(0);
        cases += 1;
        avoidable_total += avoidable;
        let mut line = format!(
            "seed {seed:3}: {} instances, start fallback {}, optimum fallback {}",
            problem.fleet().len(),
            fallback(&start),
            fallback(&best.objective)
        );
        let runs = [
            Rebalancer::new().self_check(false).target_directed(false),
            Rebalancer::new().self_check(false).greedy_units(false),
            Rebalancer::new().self_check(false),
        ];
        for (run, planner) in runs.iter().enumerate() {
            let started = Instant::now();
            let plan = planner.plan(&problem);
            time[run] += started.elapsed();
            let found = verify_rebalance(&problem, &plan);
            violations[run] += found.len();
            steps[run] += plan.steps.len();
            let gone = (fallback(&start) - fallback(&plan.objective)).min(avoidable);
            removed[run] += gone;
            line.push_str(&format!(
                "; {} removes {gone} in {} steps",
                ["greedy", "path", "default"][run],
                plan.steps.len()
            ));
            if let (1, Some(target)) = (run, &plan.target_objective) {
                line.push_str(&format!(" (target fallback {})", fallback(target)));
            }
            if let Some(first) = found.first() {
                line.push_str(&format!(" [{} violations: {first}]", found.len()));
            }
        }
        println!("{line}");
    }
    println!("\n{cases} fleets, {avoidable_total} avoidable fallback instances");
    for (run, name) in [
        "greedy units only (target_directed(false))",
        "target-directed path only (greedy_units(false))",
        "default (target-directed + greedy)",
    ]
    .into_iter()
    .enumerate()
    {
        let share = if avoidable_total > 0 { removed[run] as f64 * 100.0 / avoidable_total as f64 } else { 100.0 };
        println!(
            "{name}: removes {} = {share:.1} %, {} step violations, {} steps, {:.0} ms",
            removed[run],
            violations[run],
            steps[run],
            time[run].as_secs_f64() * 1e3
        );
    }
}
