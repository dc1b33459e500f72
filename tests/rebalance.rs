//! Rebalancing (spec §7): plans return to preferred hardware and replace several instances by
//! one in valid steps, every plan passes the independent step checker, and the checker catches
//! broken steps.

use crate::common;

use fleetplan::engines::rebalance::{
    best_reachable, change_text, reachable_problem, rebalance_score, rebalance_table, summarize,
};
use fleetplan::fleet::objective;
use fleetplan::*;
use proptest::prelude::*;

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

fn step_size(scenario: &mut Scenario, size: u32) {
    let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
    scaling.scale_in_policy = Some(ScaleInPolicySpec {
        strategy: Some(fleetplan::ScaleInStrategy::Consolidation),
        cooldown_in_minutes: None,
        maximum_step_size: Some(size),
    });
}

/// The plan without the engine's self-check, so a broken plan shows up here instead of being
/// replaced by an empty one.
fn plan_of(problem: &Problem) -> RebalancePlan {
    Rebalancer::new().self_check(false).plan(problem)
}

fn assert_valid(problem: &Problem, plan: &RebalancePlan) {
    let violations = verify_rebalance(problem, plan);
    assert!(violations.is_empty(), "violations: {violations:#?}\nplan: {}", plan.to_json());
}

fn initial_objective(problem: &Problem) -> Objective {
    objective(problem, &FinalFleet::apply(problem, &[]).0)
}

/// Two AZs, four priority-2 instances (one 4-accelerator copy each), priority-1 instances twice
/// as large. `pref_capacity` is the launch limit of the priority-1 type per AZ.
fn stuck_on_fallback(pref_capacity: [(Option<u32>, u32); 2]) -> Scenario {
    let mut builder = ScenarioBuilder::new(["a", "b"])
        .instance_type(instance_type("t-pref", 8, 10.0))
        .instance_type(instance_type("t-fall", 4, 6.0))
        .pool("t-pref", 1)
        .pool("t-fall", 2)
        .component("llm", 4, 4, 0.0, 1024)
        .max_imbalance("llm", 0);
    for (az, (available, reserved)) in ["a", "b"].into_iter().zip(pref_capacity) {
        builder = builder.capacity("t-pref", az, available, reserved);
    }
    for (index, az) in ["a", "a", "b", "b"].into_iter().enumerate() {
        let id = format!("f-{index}");
        builder = builder.fleet_instance(&id, "t-fall", az, false).fleet_copies("llm", &id, 1);
    }
    builder.build().unwrap()
}

#[test]
fn fleet_stuck_on_fallback_returns_to_priority_one() {
    let problem = Problem::new(&stuck_on_fallback([(None, 0), (None, 0)])).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.objective.instances_by_priority, [(1, 2)].into());
    assert_eq!(plan.objective.cost_micros, 20_000_000);
    assert_eq!(plan.objective.balance_excess, 0);
    assert_eq!(plan.stop_reason, StopReason::Completed);
    // MaximumStepSize 1: one launch and one release per step at most.
    assert!(plan.steps.iter().all(|step| step.launch.len() <= 1 && step.release.len() <= 1));
    let ids: Vec<&str> = plan.launches().map(|launch| launch.instance_id.as_str()).collect();
    assert_eq!(ids, ["new-1", "new-2"]);
    assert_eq!(plan.released().count(), 4);
    assert_eq!(plan, rebalance(&problem), "the self-checked plan is the same");
}

#[test]
fn capacity_is_respected_and_reservations_are_used_first() {
    // No priority-1 capacity in a, one reservation slot in b.
    let problem = Problem::new(&stuck_on_fallback([(Some(0), 0), (Some(0), 1)])).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    let launches: Vec<&Launch> = plan.launches().collect();
    assert_eq!(launches.len(), 1, "{}", plan.to_json());
    assert_eq!((launches[0].instance_type.as_str(), launches[0].availability_zone.as_str()), ("t-pref", "b"));
    assert!(launches[0].reserved);
    // AZ a stays on fallback; b's two copies share the reserved instance, which costs nothing.
    assert_eq!(plan.objective.instances_by_priority, [(1, 1), (2, 2)].into());
    assert_eq!(plan.objective.cost_micros, 12_000_000);

    // Nothing obtainable anywhere: no steps at all.
    let problem = Problem::new(&stuck_on_fallback([(Some(0), 0), (Some(0), 0)])).unwrap();
    let plan = plan_of(&problem);
    assert!(plan.steps.is_empty());
    assert_eq!(plan.objective, initial_objective(&problem));
    assert_valid(&problem, &plan);
}

#[test]
fn maximum_step_size_bounds_launches_and_releases_per_step() {
    let mut scenario = stuck_on_fallback([(None, 0), (None, 0)]);
    step_size(&mut scenario, 2);
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert!(plan.steps.iter().all(|step| step.launch.len() <= 2 && step.release.len() <= 2));
    assert!(plan.steps.iter().any(|step| step.release.len() == 2), "{}", plan.to_json());
    assert_eq!(plan.objective.instances_by_priority, [(1, 2)].into());
    // Larger steps never need more steps than step size 1.
    let single = plan_of(&Problem::new(&stuck_on_fallback([(None, 0), (None, 0)])).unwrap());
    assert!(plan.steps.len() <= single.steps.len(), "{} vs {}", plan.steps.len(), single.steps.len());
}

#[test]
fn replacement_consolidation_launches_one_instance_to_free_three() {
    // Three priority-1 instances each hold one 3-accelerator copy; no two fit together on
    // them, but a 12-accelerator instance of the same priority takes all three.
    let mut scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t-small", 4, 5.0))
        .instance_type(instance_type("t-big", 12, 12.0))
        .pool("t-small", 1)
        .pool("t-big", 1)
        .component("chat", 3, 3, 0.0, 1024)
        .strategy("chat", fleetplan::PlacementStrategy::Binpack)
        .fleet_instance("s-1", "t-small", "a", false)
        .fleet_instance("s-2", "t-small", "a", false)
        .fleet_instance("s-3", "t-small", "a", false)
        .fleet_copies("chat", "s-1", 1)
        .fleet_copies("chat", "s-2", 1)
        .fleet_copies("chat", "s-3", 1)
        .build()
        .unwrap();
    step_size(&mut scenario, 3);
    let problem = Problem::new(&scenario).unwrap();
    // Consolidation alone can release nothing.
    assert!(consolidate(&problem).steps.is_empty());
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.steps.len(), 1, "{}", plan.to_json());
    let step = &plan.steps[0];
    assert_eq!(step.launch.len(), 1);
    assert_eq!(step.launch[0].instance_type, "t-big");
    assert_eq!(step.release, ["s-1", "s-2", "s-3"]);
    assert_eq!(step.moves.len(), 3);
    assert!(step.moves.iter().all(|planned| planned.to == "new-1"));
    assert_eq!(plan.objective.instances_by_priority, [(1, 1)].into());
    assert_eq!(plan.objective.cost_micros, 12_000_000);

    // With MaximumStepSize 1 the same fleet is reached in three steps.
    step_size(&mut scenario, 1);
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.steps.len(), 3);
    assert_eq!(plan.objective.instances_by_priority, [(1, 1)].into());
}

#[test]
fn draining_instances_are_emptied_and_released_first() {
    let scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t", 8, 5.0))
        .pool("t", 1)
        .component("chat", 4, 1, 0.0, 1024)
        .strategy("chat", fleetplan::PlacementStrategy::Binpack)
        .fleet_instance("i-1", "t", "a", false)
        .fleet_instance("i-2", "t", "a", false)
        .fleet_instance("i-3", "t", "a", false)
        .fleet_copies("chat", "i-1", 1)
        .fleet_copies("chat", "i-2", 1)
        .fleet_copies("chat", "i-3", 2)
        .draining("i-3")
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    assert!(problem.fleet()[2].draining);
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.steps[0].release, ["i-3"], "{}", plan.to_json());
    let released: Vec<&str> = plan.released().collect();
    assert_eq!(released.len(), 2);
    assert!(plan.steps.iter().flat_map(|step| &step.moves).all(|planned| planned.to != "i-3"));
    assert_eq!(plan.objective.instances_by_priority, [(1, 1)].into());

    // A full draining instance with nowhere to go: a replacement of the same type is launched
    // (L3 and L4 stay equal; the draining instance is gone) before anything else is released.
    let scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t", 4, 5.0))
        .pool("t", 1)
        .component("chat", 8, 1, 0.0, 1024)
        .strategy("chat", fleetplan::PlacementStrategy::Binpack)
        .fleet_instance("i-1", "t", "a", false)
        .fleet_instance("i-2", "t", "a", false)
        .fleet_copies("chat", "i-1", 4)
        .fleet_copies("chat", "i-2", 4)
        .draining("i-1")
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].launch.len(), 1);
    assert_eq!(plan.steps[0].release, ["i-1"]);
    assert_eq!(plan.objective, initial_objective(&problem));
    let (draining_left, ..) = rebalance_score(&problem, &plan);
    assert_eq!(draining_left, 0);
}

#[test]
fn a_draining_instance_whose_copies_need_two_launches_is_emptied() {
    // Contract §6: one AZ, a draining g6.48xlarge (8 accelerators) with six 1-accelerator copies,
    // no g6.48xlarge capacity, g6.12xlarge (4 accelerators) open, MaximumStepSize 2. The copies
    // need two new instances; the greedy units launch one per unit and never emptied it.
    let mut scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.48xlarge", 1)
        .pool("ml.g6.12xlarge", 2)
        .capacity("ml.g6.48xlarge", "a", Some(0), 0)
        .component("chat", 6, 1, 1.0, 1024)
        .strategy("chat", fleetplan::PlacementStrategy::Binpack)
        .fleet_instance("i-1", "ml.g6.48xlarge", "a", false)
        .fleet_copies("chat", "i-1", 6)
        .draining("i-1")
        .build()
        .expect("valid scenario");
    step_size(&mut scenario, 2);
    let problem = Problem::new(&scenario).unwrap();
    let greedy_only = Rebalancer::new().self_check(false).target_directed(false).plan(&problem);
    assert!(greedy_only.released().all(|id| id != "i-1"), "the greedy units alone never emptied it");
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert!(plan.released().any(|id| id == "i-1"), "{}", plan.to_json());
    let (draining_left, ..) = rebalance_score(&problem, &plan);
    assert_eq!(draining_left, 0);
    assert_eq!(plan.launches().count(), 2);
    assert!(plan.launches().all(|launch| launch.instance_type == "ml.g6.12xlarge"));
    assert_eq!(plan.steps.len(), 1, "two launches fit one step of size 2: {}", plan.to_json());
    assert!(plan.target_objective.is_some());
    assert_eq!(plan.reached_objective.as_ref(), Some(&plan.objective));

    // With MaximumStepSize 1 it takes two steps: the first launches and moves without releasing.
    step_size(&mut scenario, 1);
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(rebalance_score(&problem, &plan).0, 0, "{}", plan.to_json());
    assert_eq!(plan.steps.len(), 2);
    assert!(plan.steps[0].release.is_empty());
}

#[test]
fn two_launches_free_one_larger_fallback_instance() {
    // One priority-2 8-accelerator instance holds two 4-accelerator copies; the preferred type
    // has 4 accelerators and costs less per instance. Freeing it takes two launches before the
    // release: each greedy unit (one launch) leaves a copy behind, so it never happened.
    let mut scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t-small", 4, 4.0))
        .instance_type(instance_type("t-big", 8, 10.0))
        .pool("t-small", 1)
        .pool("t-big", 2)
        .component("llm", 2, 4, 0.0, 1024)
        .strategy("llm", fleetplan::PlacementStrategy::Binpack)
        .fleet_instance("b-1", "t-big", "a", false)
        .fleet_copies("llm", "b-1", 2)
        .build()
        .expect("valid scenario");
    step_size(&mut scenario, 2);
    let problem = Problem::new(&scenario).unwrap();
    let greedy_only = Rebalancer::new().self_check(false).target_directed(false).plan(&problem);
    assert!(greedy_only.steps.is_empty(), "{}", greedy_only.to_json());
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert_eq!(plan.objective.instances_by_priority, [(1, 2)].into(), "{}", plan.to_json());
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.steps[0].release, ["b-1"]);
    assert_eq!(plan.target_objective.as_ref(), Some(&plan.objective));
}

#[test]
fn min_and_max_instance_counts_are_kept() {
    // MinInstanceCount 4: every step launches one and releases one.
    let mut scenario = stuck_on_fallback([(None, 0), (None, 0)]);
    scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default).min_instance_count = Some(4);
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    let summary = summarize(&problem, &plan);
    for step in &summary.steps {
        let size: u32 = step.after.instances_by_priority.values().sum();
        assert_eq!(size, 4);
    }
    assert_eq!(plan.objective.instances_by_priority, [(1, 4)].into());

    // A fleet above MaxInstanceCount 3 may only launch when the step ends at or below it:
    // one launch must free two instances.
    let mut scenario = stuck_on_fallback([(None, 0), (None, 0)]);
    step_size(&mut scenario, 2);
    let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(Default::default);
    scaling.max_instance_count = Some(3);
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    let summary = summarize(&problem, &plan);
    for (step, change) in plan.steps.iter().zip(&summary.steps) {
        let size: u32 = change.after.instances_by_priority.values().sum();
        assert!(step.launch.is_empty() || size <= 3, "{}", plan.to_json());
    }
    assert_eq!(plan.objective.instances_by_priority, [(1, 2)].into());
}

#[test]
fn fragmented_fleet_moves_to_preferred_hardware_and_reports_the_distance() {
    let problem = common::bundled_problem("fragmented-fleet.json");
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    let before = initial_objective(&problem);
    assert!(plan.objective.key().fallback_counts < before.key().fallback_counts);
    assert_eq!(plan.objective.placed_copies, before.placed_copies);
    assert!(plan.objective.balance_excess <= before.balance_excess);
    assert_eq!(plan, plan_of(&problem), "deterministic");
    let json = plan.to_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let first_launch = value["Steps"].as_array().unwrap().iter().find_map(|step| step["Launch"].get(0)).unwrap();
    assert_eq!(first_launch["InstanceId"], "new-1");
    assert!(value["Objective"]["InstancesByPriority"].is_object());
    let back: RebalancePlan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);

    // The exact planner's optimum for the same copies from an empty fleet bounds the result.
    let bound_problem = reachable_problem(&problem);
    assert!(bound_problem.fleet().is_empty());
    let running = problem.existing_copies_per_component();
    for (component, count) in bound_problem.components().iter().zip(running) {
        assert_eq!(u64::from(component.copy_count), count, "{}", component.name);
    }
    let best = best_reachable(&problem, std::time::Duration::from_secs(5));
    if let Some(bound) = &best.bound {
        assert!(!plan.objective.key().lt(&bound.key()), "{:?} below the bound {bound:?}", plan.objective);
    }
    let table = rebalance_table(&problem, &plan, Some(&best));
    assert!(table.contains("\nBest reachable (exact planner"), "{table}");
}

#[test]
fn fragmented_fleet_table_snapshot() {
    let problem = common::bundled_problem("fragmented-fleet.json");
    let plan = rebalance(&problem);
    insta::assert_snapshot!(rebalance_table(&problem, &plan, None));
}

#[test]
fn distance_to_the_bound_is_printed() {
    let problem = Problem::new(&stuck_on_fallback([(Some(0), 0), (Some(0), 1)])).unwrap();
    let plan = rebalance(&problem);
    let best = best_reachable(&problem, std::time::Duration::from_secs(10));
    assert_eq!(best.status, Status::Optimal);
    // The bound may use the fallback instances' own slots: 1 reserved t-pref in b, and in a the
    // two t-fall instances running there (no t-pref capacity in a).
    let bound = best.bound.clone().unwrap();
    assert_eq!(bound.instances_by_priority, [(1, 1), (2, 2)].into());
    assert_eq!(change_text(&bound, &plan.objective), "instances unchanged; cost 0.00 per hour");
    let table = rebalance_table(&problem, &plan, Some(&best));
    assert!(table.ends_with("Distance to the bound: instances unchanged; cost 0.00 per hour\n"), "{table}");
}

// ---- Fault injection: the checker flags hand-made bad steps. ----

fn messages(problem: &Problem, plan: &RebalancePlan) -> Vec<String> {
    verify_rebalance(problem, plan).into_iter().map(|violation| violation.to_string()).collect()
}

fn launch(id: &str, instance_type: &str, az: &str, reserved: bool) -> Launch {
    Launch { instance_id: id.into(), instance_type: instance_type.into(), availability_zone: az.into(), reserved }
}

fn moved(component: &str, from: &str, to: &str) -> Move {
    Move { inference_component_name: component.into(), from: from.into(), to: to.into() }
}

/// A plan with its objective recomputed, so only the injected fault is reported.
fn accounted(problem: &Problem, steps: Vec<RebalanceStep>) -> RebalancePlan {
    let mut plan = RebalancePlan {
        steps,
        objective: Objective::default(),
        stop_reason: StopReason::Completed,
        target_objective: None,
        reached_objective: None,
    };
    plan.objective = objective(problem, &plan.final_fleet(problem));
    plan
}

#[test]
fn checker_flags_a_launch_over_capacity() {
    let problem = Problem::new(&stuck_on_fallback([(Some(0), 0), (Some(1), 0)])).unwrap();
    let step = RebalanceStep {
        launch: vec![launch("new-1", "t-pref", "a", false)],
        moves: vec![moved("llm", "f-0", "new-1")],
        release: vec!["f-0".into()],
    };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(
        messages(&problem, &plan),
        ["Capacity: step 1: launch new-1 (t-pref in a): launch 1 of this type in this AZ, but only 0 are obtainable (Reserved 0 + Available 0)"]
    );
    // A reservation slot left unused, and a wrong id.
    let problem = Problem::new(&stuck_on_fallback([(Some(0), 0), (Some(0), 1)])).unwrap();
    let step = RebalanceStep {
        launch: vec![launch("new-7", "t-pref", "b", false)],
        moves: vec![moved("llm", "f-2", "new-7")],
        release: vec!["f-2".into()],
    };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(
        messages(&problem, &plan),
        [
            "Reference: step 1: launch new-7 (t-pref in b): expected id new-1 (ids count up across the plan, skipping ids the fleet uses)",
            "Capacity: step 1: launch new-7 (t-pref in b): not marked Reserved although a reservation slot is unused (slots are used first)",
        ]
    );
}

#[test]
fn checker_flags_a_step_larger_than_maximum_step_size() {
    let problem = Problem::new(&stuck_on_fallback([(None, 0), (None, 0)])).unwrap();
    let step = RebalanceStep {
        launch: vec![launch("new-1", "t-pref", "a", false), launch("new-2", "t-pref", "b", false)],
        moves: vec![moved("llm", "f-0", "new-1"), moved("llm", "f-2", "new-2")],
        release: vec!["f-0".into(), "f-2".into()],
    };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(
        messages(&problem, &plan),
        [
            "Rebalance: step 1: launches 2 instances, MaximumStepSize is 1",
            "Rebalance: step 1: releases 2 instances, MaximumStepSize is 1",
        ]
    );
}

#[test]
fn checker_flags_grown_imbalance() {
    let problem = Problem::new(&stuck_on_fallback([(None, 0), (None, 0)])).unwrap();
    // The copy of f-2 (AZ b) moves onto a launch in AZ a: a 3/1 split, MaxImbalance 0.
    let step = RebalanceStep {
        launch: vec![launch("new-1", "t-pref", "a", false)],
        moves: vec![moved("llm", "f-0", "new-1"), moved("llm", "f-2", "new-1")],
        release: vec!["f-0".into()],
    };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(messages(&problem, &plan), ["Rebalance: step 1: imbalance of llm grows from 0 to 2 copies"]);
}

#[test]
fn checker_flags_a_release_before_the_instance_is_empty_and_before_draining() {
    let mut scenario = stuck_on_fallback([(None, 0), (None, 0)]);
    scenario.fleet.instances[3].state = Some(fleetplan::InstanceState::Draining);
    let problem = Problem::new(&scenario).unwrap();
    // f-0 is released without moving its copy away, while f-3 (draining) still runs.
    let step = RebalanceStep { launch: vec![], moves: vec![], release: vec!["f-0".into()] };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(
        messages(&problem, &plan),
        [
            "Rebalance: step 1: f-0 is released but still runs copies",
            "Rebalance: step 1: releases f-0 while draining instance(s) f-3 still run (draining instances are emptied first)",
            "Rebalance: step 1: llm has 3 copies, 4 before rebalancing",
            "Rebalance: step 1: imbalance of llm grows from 0 to 1 copies",
        ]
    );
    // Make-before-break: a target must hold its copies and the incoming one at once.
    let step = RebalanceStep { launch: vec![], moves: vec![moved("llm", "f-3", "f-2")], release: vec!["f-3".into()] };
    let plan = accounted(&problem, vec![step]);
    assert_eq!(
        messages(&problem, &plan),
        ["Packing: step 1: f-2 needs 8 accelerators, 0 milli-cores, 2048 MiB while copies move in; it has 4, 96000, 393216"]
    );
    // A step that changes nothing for the better is an accounting error.
    let problem = Problem::new(&stuck_on_fallback([(None, 0), (None, 0)])).unwrap();
    let step = RebalanceStep {
        launch: vec![launch("new-1", "t-fall", "a", false)],
        moves: vec![moved("llm", "f-0", "new-1")],
        release: vec!["f-0".into()],
    };
    let plan = accounted(&problem, vec![step]);
    let found = messages(&problem, &plan);
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("Accounting: the steps do not improve the fleet"), "{found:?}");
}

// ---- Random fleets: every plan passes the checker. ----

/// Random scenarios with some fleet instances draining and a random MaximumStepSize.
const FLEETS: common::Config = common::Config {
    pool_types: (1, 4),
    components: (1, 5),
    copies: (0, 8),
    fleet: (0, 10),
    draining_percent: 50,
    step_size: Some((1, 3)),
    ..common::Config::SMALL
};

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_plan_passes_the_checker(problem in common::problem(FLEETS)) {
        let plan = plan_of(&problem);
        let violations = verify_rebalance(&problem, &plan);
        prop_assert!(violations.is_empty(), "violations: {:#?}\nplan: {}", violations, plan.to_json());
        // Never worse: copies and balance excess kept, (draining, L3, L4) strictly better or no steps.
        let before = initial_objective(&problem);
        prop_assert_eq!(plan.objective.placed_copies, before.placed_copies);
        prop_assert!(plan.objective.balance_excess <= before.balance_excess);
        prop_assert_eq!(&plan, &plan_of(&problem));
    }

    #[test]
    fn every_plan_of_the_shared_generator_passes_the_checker(problem in common::problem(common::Config::MEDIUM)) {
        let plan = plan_of(&problem);
        let violations = verify_rebalance(&problem, &plan);
        prop_assert!(violations.is_empty(), "violations: {:#?}\nplan: {}", violations, plan.to_json());
    }
}

proptest! {
    // Two planners and a replay per step: few cases keep it quick.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_target_path_verifies_step_by_step_and_ends_no_worse(problem in common::problem(FLEETS)) {
        path_steps_verify_and_end_no_worse(&problem)?;
    }

    #[test]
    fn every_path_on_a_fallback_fleet_verifies_step_by_step_and_ends_no_worse(
        problem in common::problem(common::Config::FALLBACK_FLEET)
    ) {
        prop_assume!(!problem.fleet().is_empty());
        path_steps_verify_and_end_no_worse(&problem)?;
    }
}

/// The target-directed path alone and the default plan: every prefix of steps verifies (only the
/// whole plan must improve), copies and balance are kept, the end is better or there are no steps.
fn path_steps_verify_and_end_no_worse(problem: &Problem) -> Result<(), TestCaseError> {
    // The target-directed path alone, then the default plan.
    for planner in [Rebalancer::new().self_check(false).greedy_units(false), Rebalancer::new().self_check(false)] {
        let plan = planner.plan(problem);
        // Every prefix is executable; only the full plan must improve the fleet.
        for steps in 1..=plan.steps.len() {
            let prefix = RebalancePlan {
                steps: plan.steps[..steps].to_vec(),
                objective: objective(problem, &plan.fleet_after(problem, steps)),
                stop_reason: StopReason::Completed,
                target_objective: None,
                reached_objective: None,
            };
            let violations: Vec<Violation> = verify_rebalance(problem, &prefix)
                .into_iter()
                .filter(|violation| steps == plan.steps.len() || violation.kind != ViolationKind::Accounting)
                .collect();
            prop_assert!(violations.is_empty(), "after step {}: {:#?}\nplan: {}", steps, violations, plan.to_json());
        }
        let before = initial_objective(problem);
        prop_assert_eq!(plan.objective.placed_copies, before.placed_copies);
        prop_assert!(plan.objective.balance_excess <= before.balance_excess);
        let start =
            rebalance_score(problem, &RebalancePlan { steps: Vec::new(), objective: before.clone(), ..plan.clone() });
        let end = rebalance_score(problem, &plan);
        prop_assert!(plan.steps.is_empty() || (end.0, end.1, end.2) < (start.0, start.1, start.2));
    }
    Ok(())
}

// ---- The command line. ----

#[cfg(feature = "cli")]
#[test]
fn cli_prints_json_and_a_table_with_the_distance() {
    use std::process::Command;
    let scenario = format!("{}/scenarios/fragmented-fleet.json", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(env!("CARGO_BIN_EXE_fleetplan"))
        .args(["rebalance", &scenario, "--json"])
        .output()
        .expect("fleetplan runs");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let plan: RebalancePlan = serde_json::from_slice(&output.stdout).expect("a rebalance plan");
    let problem = common::bundled_problem("fragmented-fleet.json");
    assert_eq!(plan, rebalance(&problem));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(value["Steps"].is_array() && value["Objective"]["Cost"].is_number());

    let output = Command::new(env!("CARGO_BIN_EXE_fleetplan"))
        .args(["rebalance", &scenario, "--time-limit-ms", "5000"])
        .output()
        .expect("fleetplan runs");
    assert_eq!(output.status.code(), Some(0));
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.starts_with("Rebalance for endpoint "), "{table}");
    assert!(table.contains("\nStep 1 ("), "{table}");
    assert!(table.contains("\nDistance to the bound: ") || table.contains("\nNo proven bound;"), "{table}");

    // Bad input: exit 2.
    let output = Command::new(env!("CARGO_BIN_EXE_fleetplan"))
        .args(["rebalance", "/nonexistent.json"])
        .output()
        .expect("fleetplan runs");
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn the_table_escapes_names_like_every_other_table() {
    let problem = common::bundled_problem("fragmented-fleet.json");
    let plan = RebalancePlan {
        steps: vec![RebalanceStep {
            launch: vec![Launch {
                instance_id: "new\u{1b}[31m".into(),
                instance_type: "t\u{202e}x".into(),
                availability_zone: "az\n2".into(),
                reserved: false,
            }],
            moves: vec![Move {
                inference_component_name: "c\tx".into(),
                from: "i\\1".into(),
                to: "new\u{1b}[31m".into(),
            }],
            release: vec!["gone\u{85}".into()],
        }],
        objective: initial_objective(&problem),
        stop_reason: StopReason::Completed,
        target_objective: None,
        reached_objective: None,
    };
    let table = rebalance_table(&problem, &plan, None);
    assert!(!table.chars().any(|ch| ch.is_control() && ch != '\n' || ch == '\u{202e}'), "{table:?}");
    assert!(table.contains("  launch new\\u{1b}[31m (t\\u{202e}x, az\\n2)\n"), "{table}");
    assert!(table.contains("  c\\tx       i\\\\1  new\\u{1b}[31m (t\\u{202e}x, az\\n2)\n"), "{table}");
    assert!(table.contains("  release gone\\u{85}\n"), "{table}");
}

/// Issue 18, defect 1: a fleet whose ids look like generated ones (`new-1` with a copy, `new-2`
/// idle, both on fallback hardware). A launch must never take an id the fleet uses: the plan
/// once launched `new-1` and then moved `new-1 -> new-1` and released it, losing the copy.
#[test]
fn rebalance_never_launches_an_id_the_fleet_uses() {
    let scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t-pref", 8, 10.0))
        .instance_type(instance_type("t-fall", 4, 6.0))
        .pool("t-pref", 1)
        .pool("t-fall", 2)
        .component("llm", 1, 4, 0.0, 1024)
        .fleet_instance("new-1", "t-fall", "a", false)
        .fleet_copies("llm", "new-1", 1)
        .fleet_instance("new-2", "t-fall", "a", false)
        .build()
        .expect("valid scenario");
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_of(&problem);
    assert_valid(&problem, &plan);
    assert!(!plan.steps.is_empty(), "the fleet can move to t-pref: {}", plan.to_json());
    let fleet_ids: Vec<&str> = problem.fleet().iter().map(|instance| instance.id.as_str()).collect();
    for launch in plan.launches() {
        assert!(!fleet_ids.contains(&launch.instance_id.as_str()), "{} is already in the fleet", launch.instance_id);
    }
    assert_eq!(plan.objective.placed_copies, 1);
    assert_eq!(plan.final_fleet(&problem).copies_per_az(&problem)[0].iter().sum::<u64>(), 1);
    // With the self-check on, the plan is the same valid plan (not replaced by an empty one).
    assert_eq!(Rebalancer::new().plan(&problem), plan);
}

/// The checker rejects a launch whose id an instance of the fleet carries, and expects the ids
/// to count up skipping the fleet's ids (`new-3` after a fleet of `new-1` and `new-2`).
#[test]
fn checker_flags_a_launch_whose_id_is_in_the_fleet() {
    let scenario = ScenarioBuilder::new(["a"])
        .instance_type(instance_type("t-pref", 8, 10.0))
        .instance_type(instance_type("t-fall", 4, 6.0))
        .pool("t-pref", 1)
        .pool("t-fall", 2)
        .component("llm", 1, 4, 0.0, 1024)
        .fleet_instance("new-1", "t-fall", "a", false)
        .fleet_copies("llm", "new-1", 1)
        .fleet_instance("new-2", "t-fall", "a", false)
        .build()
        .expect("valid scenario");
    let problem = Problem::new(&scenario).unwrap();
    let steps = |id: &str| {
        vec![RebalanceStep {
            launch: vec![launch(id, "t-pref", "a", false)],
            moves: vec![moved("llm", "new-1", id)],
            release: vec!["new-2".into()],
        }]
    };
    let taken = messages(&problem, &accounted(&problem, steps("new-1")));
    assert!(
        taken.iter().any(|message| message.contains("launch new-1")
            && message.contains("already in use by an instance of the fleet")),
        "{taken:#?}"
    );
    let skipped = messages(&problem, &accounted(&problem, steps("new-2")));
    assert!(skipped.iter().any(|message| message.contains("already in use")), "{skipped:#?}");
    let fresh = messages(&problem, &accounted(&problem, steps("new-3")));
    assert!(fresh.iter().all(|message| !message.contains("new-3")), "{fresh:#?}");
    let gap = messages(&problem, &accounted(&problem, steps("new-4")));
    assert!(gap.iter().any(|message| message.contains("expected id new-3")), "{gap:#?}");
}

/// Random fleets whose instances carry ids of the generated form (`new-N`, random distinct N,
/// as a fleet observed after earlier plans has).
fn scenario_with_generated_ids(config: common::Config) -> impl Strategy<Value = Scenario> {
    let numbers = Just((1..=2 * config.fleet.1.max(1)).collect::<Vec<u32>>()).prop_shuffle();
    (common::scenario(config), numbers).prop_map(|(mut scenario, numbers)| {
        let renamed: std::collections::BTreeMap<String, String> = scenario
            .fleet
            .instances
            .iter()
            .zip(&numbers)
            .map(|(instance, number)| (instance.instance_id.clone(), format!("new-{number}")))
            .collect();
        for instance in &mut scenario.fleet.instances {
            if let Some(id) = renamed.get(&instance.instance_id) {
                instance.instance_id = id.clone();
            }
        }
        for copy in &mut scenario.fleet.copies {
            if let Some(id) = renamed.get(&copy.instance_id) {
                copy.instance_id = id.clone();
            }
        }
        scenario
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// Issue 18, defect 1: no engine launches an id the fleet uses, and rebalance plans of such
    /// fleets pass the checker and keep every copy.
    #[test]
    fn launches_never_take_an_id_of_the_fleet(scenario in scenario_with_generated_ids(FLEETS)) {
        let problem = Problem::new(&scenario);
        prop_assume!(problem.is_ok(), "the generator makes valid scenarios: {:?}", problem.err());
        let Ok(problem) = problem else { return Ok(()) };
        let fleet_ids: std::collections::BTreeSet<&str> =
            problem.fleet().iter().map(|instance| instance.id.as_str()).collect();
        let plan = plan_of(&problem);
        let violations = verify_rebalance(&problem, &plan);
        prop_assert!(violations.is_empty(), "violations: {:#?}\nplan: {}", violations, plan.to_json());
        for launch in plan.launches() {
            prop_assert!(!fleet_ids.contains(launch.instance_id.as_str()), "rebalance launches {}", launch.instance_id);
        }
        prop_assert_eq!(plan.objective.placed_copies, initial_objective(&problem).placed_copies);
        let greedy = plan_greedy(&problem);
        for action in &greedy.actions {
            if let Action::LaunchInstance { instance_id, .. } = action {
                prop_assert!(!fleet_ids.contains(instance_id.as_str()), "greedy launches {}", instance_id);
            }
        }
    }
}
