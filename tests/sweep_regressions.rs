//! Regression cases found by the scenario sweep (`examples/scenario_sweep.rs`, `docs/sweep.md`).
//! Each scenario is under `tests/data/sweep/`.

use fleetplan::__internal::check_fleet;
use fleetplan::*;
use fleetplan::{objective, FinalFleet};

fn load(name: &str) -> (String, Problem) {
    let path = format!("{}/tests/data/sweep/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("sweep scenario exists");
    let problem = Problem::from_json(&text).expect("sweep scenario is valid");
    (text, problem)
}

/// Greedy on the same scenario with every pool at priority 1, scored on the original problem.
/// Priorities only rank plans, so the plan stays feasible; it is a known objective that an
/// optimal planner cannot lose to. Returns the objective and the hard-constraint violations.
fn flat_priority_witness(text: &str, problem: &Problem) -> (Objective, Vec<Violation>) {
    let mut flat = fleetplan::scenario_from_json(text).expect("scenario parses");
    for pool in &mut flat.endpoint.instance_pools {
        pool.priority = 1;
    }
    let flat_problem = Problem::new(&flat).expect("flattened scenario is valid");
    let actions = plan_greedy(&flat_problem).actions;
    let (fleet, mut violations) = FinalFleet::apply(problem, &actions);
    let launches = actions.iter().filter(|a| matches!(a, Action::LaunchInstance { .. })).count();
    check_fleet(problem, &fleet, launches, &mut violations);
    (objective(problem, &fleet), violations)
}

/// 13 components, 57 copies, 2 AZs, pools g5.xlarge (1) / inf2.xlarge (3) / p5.48xlarge (5),
/// MaxInstanceCount 30: the maximum binds, so L1 wants the big fallback type. Greedy used to fill
/// the maximum with priority-1 g5.xlarge and place 53; a flat-priority greedy places 56, which is
/// the exact planner's own bound, so 56 is the L1 optimum. Greedy's largest-first pass and repair
/// pass (issue 11) now place 56 too.
#[test]
fn max_instances_l1_gap_witness_places_the_bound() {
    let (text, problem) = load("max-instances-l1-gap.json");
    let (witness, violations) = flat_priority_witness(&text, &problem);
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(witness.placed_copies, 56);
    let greedy = plan_greedy(&problem);
    assert!(verify(&problem, &greedy).is_empty());
    assert_eq!(greedy.objective.placed_copies, 56, "greedy reaches the L1 optimum");
}

/// The exact planner should not return less than a feasible plan it can get as cheaply as its
/// own greedy warm start. It used to return `Feasible` with 53 placed (bound 56) under the CLI's
/// default 10 s limit; fixed by integral stops between node chunks and the flat-priority warm
/// plan (now proven in about 0.1–0.5 s without limits). Measured on this case: `node_limit(1000)` proves the
/// optimum (56 placed) in 0.2 s, no limit at all proves it in ~180 s, while a time limit alone
/// stays in one long solve and ends at greedy's 53. A node limit of 100 reproduces the 53
/// deterministically; a flat-priority greedy warm start (or a per-solve node cap that is raised
/// until the time runs out) would fix it.
#[test]
fn exact_is_not_worse_than_the_flat_priority_witness() {
    let (text, problem) = load("max-instances-l1-gap.json");
    let (witness, violations) = flat_priority_witness(&text, &problem);
    assert!(violations.is_empty(), "{violations:?}");
    let exact = ExactPlanner::new().node_limit(100).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert!(
        !witness.better_than(&exact.objective),
        "exact {:?} ({:?}, {:?}) loses to the witness {witness:?}",
        exact.objective,
        exact.status,
        exact.stop_reason
    );
}

/// With a node limit the exact planner reaches the optimum of the same case quickly (0.5 s); this
/// pins the optimum (56 placed, 5 balance excess) the test above must reach.
#[test]
fn exact_with_a_node_limit_proves_the_max_instances_optimum() {
    let (text, problem) = load("max-instances-l1-gap.json");
    let (witness, _) = flat_priority_witness(&text, &problem);
    let exact = ExactPlanner::new().node_limit(10_000).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert!(!witness.better_than(&exact.objective));
    assert_eq!(exact.objective.placed_copies, 56);
    if exact.status == Status::Optimal {
        // Proven with no limit at all too (about 180 s): 5 is the least balance excess.
        assert_eq!(exact.objective.balance_excess, 5);
        assert_eq!(exact.bound, None);
    }
}

/// Minimised from sweep scenario `sweep-1-039` (seed 1): 6 components, 25 copies, 1 AZ, five
/// pool types, three idle fleet instances. The optimum (25 placed, 1 × p1, 1 × p3, 6 × p4) is
/// found within 100 nodes, but proving it takes more than 10,000 nodes in one solve (3.7 s of
/// CPU); the CLI's default 10 s limit on a loaded machine ended at `Feasible`. The greedy plan
/// keeps one more p4 instance. Proven within the node limit since integral levels stop once the
/// incumbent is within one unit of the bound.
#[test]
fn small_one_az_case_is_proven_within_ten_thousand_nodes() {
    let (_, problem) = load("slow-small-proof.json");
    let exact = ExactPlanner::new().node_limit(10_000).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert_eq!(exact.status, Status::Optimal, "{:?}, bound {:?}", exact.stop_reason, exact.bound);
}

/// The same case's optimum, reached (not proven) within a small node limit: the plan must keep
/// one instance fewer than greedy.
#[test]
fn small_one_az_case_reaches_its_optimum_quickly() {
    let (_, problem) = load("slow-small-proof.json");
    let greedy = plan_greedy(&problem);
    let exact = ExactPlanner::new().node_limit(100).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert_eq!(exact.objective.placed_copies, 25);
    assert_eq!(exact.objective.instances_by_priority.values().sum::<u32>(), 8);
    assert!(exact.objective.better_than(&greedy.objective));
}

/// Sweep scenario `sweep-2-011` (seed 2): 22 components, 99 copies, 1 AZ, pools p5en (1) / p5 (3) /
/// p5e (4), 8 fleet instances. At the time or node limit the exact planner keeps greedy's L1–L3
/// (80 placed, 3 × p1, 23 × p3, 2 × p4) at $2,629.40/h; the flat-priority greedy reaches the same
/// L1–L3 at $2,516.33/h. Deterministic with a node limit of 1,000. Fixed: the flat-priority
/// greedy plan is now one of the exact planner's warm plans.
#[test]
fn exact_is_not_more_expensive_than_the_flat_priority_witness() {
    let (text, problem) = load("flat-witness-cheaper.json");
    let (witness, violations) = flat_priority_witness(&text, &problem);
    assert!(violations.is_empty(), "{violations:?}");
    let exact = ExactPlanner::new().node_limit(1_000).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert!(!witness.better_than(&exact.objective), "exact {:?} loses to the witness {witness:?}", exact.objective);
}

/// The witness itself: feasible, and at the exact plan's L1–L3 for $2,516.33/h. The exact
/// planner's bound on the cost is $2,408.64/h. Greedy used to keep two more p3 instances; with
/// the component orders where each component goes first in turn (issue 11) it reaches the
/// witness exactly.
#[test]
fn flat_priority_witness_is_feasible_and_greedy_now_reaches_it() {
    let (text, problem) = load("flat-witness-cheaper.json");
    let (witness, violations) = flat_priority_witness(&text, &problem);
    assert!(violations.is_empty(), "{violations:?}");
    let greedy = plan_greedy(&problem).objective;
    assert_eq!(greedy, witness, "greedy reaches the witness");
    let by_priority: Vec<(u8, u32)> = witness.instances_by_priority.iter().map(|(&p, &n)| (p, n)).collect();
    assert_eq!((witness.placed_copies, witness.balance_excess), (80, 0));
    assert_eq!(by_priority, vec![(1, 3), (3, 23), (4, 2)]);
    assert_eq!(witness.cost_micros, 2_516_330_000);
}

/// Found by the sweep's fault injection (`scenario_sweep mutate`): `verify` (through
/// `FinalFleet::apply` in `src/fleet.rs`) rejects a `PlaceCopy` whose `ModelName` is the
/// component's `Specification.ModelName` when the pool entry has a `ModelNameOverride`, because the
/// crate's own rule picks the override. The contract does not say which wins and contract §2 has no
/// model-name rule, so a plan from another solver that picks the specification's build is valid,
/// yet `fleetplan verify` exited 1 on it. Fixed: `Requirement::other_model_name` keeps the build
/// not chosen, and `verify` accepts either.
#[test]
fn verify_accepts_either_model_build_where_the_contract_is_silent() {
    let (_, problem) = load("model-name-precedence.json");
    let plan_text = r#"{"Solver": "greedy", "Status": "Feasible", "Actions": [
        {"Type": "LaunchInstance", "InstanceId": "new-1", "InstanceType": "ml.g6.12xlarge",
         "AvailabilityZone": "a", "Reserved": false},
        {"Type": "PlaceCopy", "InferenceComponentName": "llm", "InstanceId": "new-1", "ModelName": "llm-fp16"}],
      "Unplaced": [], "Objective": {"PlacedCopies": 1, "BalanceExcess": 0, "InstancesByPriority": {"1": 1},
      "Cost": 1.0}, "Bound": null}"#;
    let plan = Plan::from_json(plan_text).expect("plan parses");
    let violations = verify(&problem, &plan);
    assert!(violations.is_empty(), "{violations:?}");
}

/// The same plan with the override's build, and without a `ModelName`, passes today.
#[test]
fn verify_accepts_the_override_build_and_no_model_name() {
    let (_, problem) = load("model-name-precedence.json");
    for model in [r#", "ModelName": "llm-int4""#, ""] {
        let plan_text = format!(
            r#"{{"Solver": "greedy", "Status": "Feasible", "Actions": [
            {{"Type": "LaunchInstance", "InstanceId": "new-1", "InstanceType": "ml.g6.12xlarge",
             "AvailabilityZone": "a", "Reserved": false}},
            {{"Type": "PlaceCopy", "InferenceComponentName": "llm", "InstanceId": "new-1"{model}}}],
          "Unplaced": [], "Objective": {{"PlacedCopies": 1, "BalanceExcess": 0, "InstancesByPriority": {{"1": 1}},
          "Cost": 1.0}}, "Bound": null}}"#
        );
        // A plan from another tool: no CostUnit (the cost is 1 instance here), read as any source.
        let plan = Plan::from_json(&plan_text).expect("plan parses");
        assert!(verify(&problem, &plan).is_empty(), "{model}");
    }
}

/// sweep-2-034: 25 components, 139 copies, 3 AZs, every pool priced. L1–L3 are fixed within a
/// few solves and the cheapest fleet of those counts costs exactly the cost floor (the cheapest
/// price per priority times the instances), but the priced cost level is not integral, so the
/// solver kept closing a gap of a millionth against the floor's cut: 5 s without a proof. With
/// the floor's proof (a solution at the floor, counted in whole millionths, is optimal) the
/// level ends at its first solution there. A node limit makes the run deterministic: before,
/// it ended on that limit.
#[test]
fn a_priced_plan_at_the_cost_floor_is_proven_without_search() {
    let (_, problem) = load("priced-cost-floor.json");
    let exact = ExactPlanner::new().node_limit(20_000).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert_eq!(exact.status, Status::Optimal, "{:?}", exact.stop_reason);
    assert_eq!(exact.stop_reason, StopReason::Completed);
    assert_eq!(exact.objective.placed_copies, 139);
    assert_eq!(exact.objective.cost_micros, 2_906_700_000);
}

/// sweep-2-038: the master's best solution puts 18 accelerators' worth of copies into three
/// 6-accelerator instances of one (type, AZ), which no packing fits (8 copies use a third of an
/// instance's memory each). The next round models that group instance by instance and is far
/// larger; stopped there (here by `max_rounds(1)`, in the sweep by the time limit), the planner
/// used to return the greedy plan. It now returns the master solution packed with a spare
/// instance, verified, when that is better than greedy: here one priority-1 instance fewer.
#[test]
fn a_master_solution_that_does_not_pack_still_beats_greedy_with_a_spare_instance() {
    // Not under `tests/data/`: the harness would run the time-limited engines on it for a
    // minute (the slot-model round does not finish).
    let problem = Problem::from_json(include_str!("fixtures/loose-packing.json")).expect("valid scenario");
    let greedy = plan_greedy(&problem);
    // 2,000 nodes (deepening to 1,024) still end on a master solution that packs only with a
    // spare instance (checked when this limit replaced 20,000, which took 150 s of the suite).
    let exact = ExactPlanner::new().node_limit(2_000).max_rounds(1).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert_eq!(exact.status, Status::Feasible);
    assert!(exact.objective.better_than(&greedy.objective), "{:?} vs greedy {:?}", exact.objective, greedy.objective);
    assert_eq!(exact.objective.placed_copies, greedy.objective.placed_copies);
    assert_eq!(exact.objective.balance_excess, greedy.objective.balance_excess);
}

/// Greedy's plan for a sweep scenario: verified, its objective returned.
fn greedy_objective(problem: &Problem) -> Objective {
    let plan = plan_greedy(problem);
    let violations = verify(problem, &plan);
    assert!(violations.is_empty(), "{violations:?}");
    plan.objective
}

/// The exact planner's proven optimum of a small scenario.
fn proven_optimum(problem: &Problem) -> Objective {
    let exact = ExactPlanner::new().time_limit(std::time::Duration::from_secs(30)).plan(problem);
    assert_eq!(exact.status, Status::Optimal, "the exact planner proves the optimum");
    exact.objective
}

/// `sweep-2-018` in small form, one AZ: MaxInstanceCount 6; 6 copies needing 4 accelerators and
/// 12 needing 1. The preferred `g4dn.12xlarge` (4 accelerators) holds one big copy and nothing
/// else; the fallback `inf2.24xlarge` (6) holds one big copy and two small ones. Greedy used to
/// take the preferred type (one big copy per instance either way) and place 16; its rescue pass
/// (run because copies stayed unplaced) counts the room an opening leaves for other missing
/// copies and places all 18, the optimum.
#[test]
fn greedy_places_every_copy_when_max_instances_binds_on_big_copies() {
    let (_, problem) = load("max-instances-copies-per-instance.json");
    let greedy = greedy_objective(&problem);
    assert_eq!(greedy.placed_copies, 18);
    assert_eq!(greedy.key(), proven_optimum(&problem).key());
}

/// The same with two AZs, MaxImbalance 0 and one `inf2.24xlarge` left in `eu-west-1a`:
/// placing the big copies evenly takes `g4dn.12xlarge` in `eu-west-1a` and leaves copies out;
/// the optimum places all 18 with balance excess 12 (L1 before L2). Greedy's dense pass chooses
/// AZs by copies per opening before balance, as far as that opening type lasts in the AZ.
#[test]
fn greedy_trades_balance_for_copies_when_max_instances_binds() {
    let (_, problem) = load("max-instances-copies-per-instance-azs.json");
    let greedy = greedy_objective(&problem);
    assert_eq!((greedy.placed_copies, greedy.balance_excess), (18, 12));
    assert_eq!(greedy.key(), proven_optimum(&problem).key());
}

/// `sweep-2-018` itself (26 components, 2 AZs, MaxInstanceCount 42; `inf2.24xlarge` scarce in
/// `eu-west-1a`): greedy placed 109 of 119, the exact planner's proven optimum places 119.
#[test]
fn greedy_reaches_the_l1_optimum_of_sweep_2_018() {
    let text = include_str!("greedy_fixtures/sweep-2-018.json");
    let problem = Problem::from_json(text).expect("sweep scenario is valid");
    assert_eq!(greedy_objective(&problem).placed_copies, 119);
}

/// `sweep-2-023`: a single-model endpoint (MaxImbalance 1), 3 AZs, MaxInstanceCount 3 with one
/// instance running in `eu-west-1c`. Greedy launched both remaining instances in `eu-west-1a`
/// (its whole share first) and left `eu-west-1b` empty (balance excess 1). Copies stay unplaced
/// (MaxInstanceCount), so the rescue passes run; in their AZ-turns mode the AZs take turns when
/// the openings left cannot cover the round, which gives the optimum 1/1/1.
#[test]
fn greedy_azs_take_turns_when_the_instance_budget_is_short() {
    let (_, problem) = load("sweep-2-023.json");
    let greedy = greedy_objective(&problem);
    assert_eq!((greedy.placed_copies, greedy.balance_excess), (3, 0));
    assert_eq!(greedy.key(), proven_optimum(&problem).key());
}

fn phase_names(stats: &fleetplan::Stats) -> Vec<&str> {
    stats.phases.iter().map(|phase| phase.name.as_str()).collect()
}

/// Under a deadline the exact planner first tries a cheap warm start (greedy with a few passes)
/// and a short search. Greedy's plan here is worse than the optimum on L3, so the proof takes a
/// search; what the quick attempt proves is the optimum the node-limited run (deterministic, no
/// quick attempt) proves. The slice is set long so that a loaded machine cannot cut it short.
#[test]
fn the_quick_attempt_proves_the_optimum_the_full_search_proves() {
    let problem = Problem::from_json(include_str!("fixtures/quick-attempt.json")).expect("valid scenario");
    let greedy = plan_greedy(&problem);
    let (quick, stats) = ExactPlanner::new()
        .time_limit(std::time::Duration::from_secs(600))
        .quick_slice(std::time::Duration::from_secs(30))
        .plan_with_stats(&problem);
    assert_eq!(phase_names(&stats), ["quick attempt"]);
    assert_eq!(quick.status, Status::Optimal);
    assert!(verify(&problem, &quick).is_empty());
    assert!(quick.objective.better_than(&greedy.objective), "{:?} vs {:?}", quick.objective, greedy.objective);
    let (full, stats) = ExactPlanner::new().node_limit(100_000).plan_with_stats(&problem);
    assert!(!phase_names(&stats).contains(&"quick attempt"), "{:?}", phase_names(&stats));
    assert_eq!(full.status, Status::Optimal);
    assert_eq!(quick.objective, full.objective);
}

/// A quick attempt that proves nothing is followed by the full search from greedy's full warm
/// start, so the cheap warm start never makes the result worse than greedy's plan.
#[test]
fn a_quick_attempt_that_proves_nothing_leaves_the_result_no_worse_than_greedy() {
    let problem = Problem::from_json(include_str!("fixtures/loose-packing.json")).expect("valid scenario");
    let greedy = plan_greedy(&problem);
    // One node per solve: the quick attempt cannot prove this endpoint (it takes thousands).
    let (exact, stats) = ExactPlanner::new()
        .time_limit(std::time::Duration::from_secs(600))
        .node_limit(1)
        .max_rounds(1)
        .plan_with_stats(&problem);
    assert_eq!(phase_names(&stats)[..2], ["quick attempt", "warm start (greedy)"]);
    assert!(verify(&problem, &exact).is_empty());
    assert!(!greedy.objective.better_than(&exact.objective), "{:?} vs {:?}", exact.objective, greedy.objective);
    // Turned off, the run starts with greedy's full warm start.
    let (_, stats) = ExactPlanner::new()
        .time_limit(std::time::Duration::from_secs(600))
        .node_limit(1)
        .max_rounds(1)
        .quick_slice(std::time::Duration::ZERO)
        .plan_with_stats(&problem);
    assert_eq!(phase_names(&stats)[0], "warm start (greedy)");
}

/// Sweep scenario `hard-22-014` (`--preset hard`, seed 22): 2 AZs, 53 components, 223 copies
/// placed, 11 existing instances; nearly every copy needs the single accelerator of either pool
/// type (p1 `inf2.xlarge`, p3 `g6.8xlarge`), so n₃'s LP bound (84.7) is several instances below
/// its optimum 89. The full search from the bound ran 8 s without improving greedy's 94; the
/// relax-and-fix ladder proves 86, 87 and 88 unreachable and finds 89, then n₁'s optimum 123 the
/// same way (`docs/formulation.md`, "The ladder"). Node-limited, so deterministic. Since greedy
/// ends with the instance polishes (`engines::polish::better_instances`, 2026-12-08) its own plan
/// is at that optimum already (n₃ 94 → 89, n₁ 123); the exact planner's warm start is greedy
/// without them (n₃ 94), so the ladder still climbs from there.
#[test]
fn the_relax_and_fix_ladder_reaches_an_l3_optimum_above_the_lp_bound() {
    // In `tests/fixtures/`, not `tests/data/`: the harness would run every engine on it.
    let problem = Problem::from_json(include_str!("fixtures/hard-22-014.json")).expect("valid scenario");
    let greedy = plan_greedy(&problem);
    assert_eq!(greedy.objective.instances_of_priority(3), 89);
    let exact = ExactPlanner::new().node_limit(300).deepening(false).large_neighbourhood(false).plan(&problem);
    assert!(verify(&problem, &exact).is_empty());
    assert_eq!((exact.objective.placed_copies, exact.objective.balance_excess), (223, 32));
    assert_eq!(exact.objective.instances_of_priority(6), 1);
    assert_eq!(exact.objective.instances_of_priority(3), 89, "{:?}", exact.objective);
    assert_eq!(exact.objective.instances_of_priority(1), 123, "{:?}", exact.objective);
}
