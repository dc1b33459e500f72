//! The public executors (`fleetplan::execute`, contract §6–§7): a scheduler drives the whole
//! loop — plan, execute with a failed launch, replan with the implied capacity event, drain,
//! rebalance, execute steps with a failure, consolidate, execute — through the public API only,
//! and the executors refuse executions that do not describe the plan.

use fleetplan::*;

/// (id, type, AZ, draining) per instance, then (component, id, copies) per copy entry.
type FleetView = (Vec<(String, String, String, bool)>, Vec<(String, String, u64)>);

fn view(fleet: &Fleet) -> FleetView {
    let instances = fleet
        .instances
        .iter()
        .map(|instance| {
            (
                instance.instance_id.clone(),
                instance.instance_type.clone(),
                instance.availability_zone.clone(),
                instance.state.is_some_and(|state| state.as_str() == "Draining"),
            )
        })
        .collect();
    let copies = fleet
        .copies
        .iter()
        .map(|copy| (copy.inference_component_name.clone(), copy.instance_id.clone(), copy.copy_count as u64))
        .collect();
    (instances, copies)
}

fn instance(id: &str, instance_type: &str, az: &str, draining: bool) -> (String, String, String, bool) {
    (id.into(), instance_type.into(), az.into(), draining)
}

fn copies(component: &str, id: &str, count: u64) -> (String, String, u64) {
    (component.into(), id.into(), count)
}

fn event(instance_type: &str, az: &str, kind: CapacityEventKind, time: i64) -> CapacityRecord {
    CapacityRecord::new(instance_type, az, kind, time)
}

const P5: &str = "ml.p5.48xlarge";
const G6: &str = "ml.g6.48xlarge";

fn scenario() -> Scenario {
    ScenarioBuilder::new(["a", "b"])
        .pool(P5, 1)
        .pool(G6, 2)
        .component("llm", 2, 8, 8.0, 65_536)
        .max_imbalance("llm", 0)
        .component("chat", 2, 1, 1.0, 1_024)
        .strategy("chat", fleetplan::PlacementStrategy::Binpack)
        .build()
        .expect("valid scenario")
}

#[test]
fn a_scheduler_drives_the_whole_loop_through_the_public_api() {
    let mut scenario = scenario();
    let mut ledger = CapacityLedger::new();

    // 1. Plan at 1000: p5 for llm in a and b, a third p5 in a for both chat copies. The launch
    //    in b fails for lack of capacity.
    ledger.apply(&mut scenario, 1_000);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = plan_greedy(&problem);
    let execution = Execution::new(1_000)
        .launched("new-1", "i-1")
        .launch_failed("new-2", LaunchFailure::InsufficientCapacity)
        .launched("new-3", "i-3");
    let observed = execute_plan(&problem, &plan, &execution).expect("the execution describes the plan");
    assert_eq!(
        view(&observed.fleet),
        (
            vec![instance("i-1", P5, "a", false), instance("i-3", P5, "a", false)],
            vec![copies("llm", "i-1", 1), copies("chat", "i-3", 2)]
        )
    );
    assert_eq!(
        observed.capacity_events,
        vec![
            event(P5, "a", CapacityEventKind::Launched, 1_000),
            event(P5, "b", CapacityEventKind::InsufficientCapacity, 1_000),
        ]
    );
    assert_eq!(observed.failed_launches, vec!["new-2".to_string()]);
    ledger.extend(observed.capacity_events.iter().cloned());
    scenario.fleet = observed.fleet;

    // 2. Replan at 1010 with the implied event: p5 in b is blocked, llm falls back to g6 there.
    ledger.apply(&mut scenario, 1_010);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = plan_greedy(&problem);
    assert!(verify(&problem, &plan).is_empty());
    let observed =
        execute_plan(&problem, &plan, &Execution::new(1_010).launched("new-1", "i-4")).expect("describes the plan");
    assert_eq!(observed.capacity_events, vec![event(G6, "b", CapacityEventKind::Launched, 1_010)]);
    ledger.extend(observed.capacity_events.iter().cloned());
    scenario.fleet = observed.fleet;
    assert_eq!(view(&scenario.fleet).0[2], instance("i-4", G6, "b", false));

    // 3. Drain the chat host; at 1200 the error has expired. The rebalance replaces the
    //    draining p5 (step 1) and the g6 (step 2); the second move of step 1 fails.
    scenario.fleet.instances[1].state = Some(fleetplan::InstanceState::parse("Draining").expect("known"));
    ledger.apply(&mut scenario, 1_200);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = rebalance(&problem);
    assert!(verify_rebalance(&problem, &plan).is_empty());
    assert_eq!((plan.steps.len(), plan.steps[0].moves.len()), (2, 2));
    let execution = StepExecution::new(1_200).launched("new-1", "i-5").move_failed(0, 1);
    let outcome = execute_rebalance(&problem, &plan, &execution).expect("describes the plan");
    // No copy lost: one chat copy moved, the other still runs on the draining instance, which
    // is not released; step 2 never ran.
    assert_eq!(
        view(&outcome.fleet),
        (
            vec![
                instance("i-1", P5, "a", false),
                instance("i-3", P5, "a", true),
                instance("i-4", G6, "b", false),
                instance("i-5", P5, "a", false)
            ],
            vec![copies("llm", "i-1", 1), copies("chat", "i-3", 1), copies("llm", "i-4", 1), copies("chat", "i-5", 1)]
        )
    );
    assert_eq!((outcome.steps_completed, outcome.moves), (0, 1));
    assert!(matches!(outcome.failure, Some(StepFailure::Move { step: 0, index: 1, .. })));
    assert!(outcome.released.is_empty() && outcome.abandoned.is_empty());
    assert_eq!(outcome.launched.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(), ["i-5"]);
    assert_eq!(outcome.capacity_events, vec![event(P5, "a", CapacityEventKind::Launched, 1_200)]);
    ledger.extend(outcome.capacity_events.iter().cloned());
    scenario.fleet = outcome.fleet;

    // 4. Consolidate at 1300: the draining instance's last copy joins the other, it is released.
    ledger.apply(&mut scenario, 1_300);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = consolidate(&problem);
    assert!(verify_consolidation(&problem, &plan).is_empty());
    let outcome = execute_consolidation(&problem, &plan, &StepExecution::new(1_300)).expect("describes the plan");
    assert_eq!(
        view(&outcome.fleet),
        (
            vec![instance("i-1", P5, "a", false), instance("i-4", G6, "b", false), instance("i-5", P5, "a", false)],
            vec![copies("llm", "i-1", 1), copies("llm", "i-4", 1), copies("chat", "i-5", 2)]
        )
    );
    assert_eq!(outcome.released.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(), ["i-3"]);
    assert!(outcome.capacity_events.is_empty());
    scenario.fleet = outcome.fleet;

    // 5. Rebalance at 1400: g6 → p5 in b; the launch times out. The fleet is unchanged and the
    //    ledger learns the block.
    ledger.apply(&mut scenario, 1_400);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = rebalance(&problem);
    let execution = StepExecution::new(1_400).launch_failed("new-1", LaunchFailure::ProvisioningTimeout);
    let outcome = execute_rebalance(&problem, &plan, &execution).expect("describes the plan");
    assert_eq!(outcome.fleet, scenario.fleet);
    assert_eq!(outcome.steps_completed, 0);
    assert!(matches!(
        &outcome.failure,
        Some(StepFailure::Launch { step: 0, failure: LaunchFailure::ProvisioningTimeout, launch }) if launch.availability_zone == "b"
    ));
    assert_eq!(outcome.capacity_events, vec![event(P5, "b", CapacityEventKind::ProvisioningTimeout, 1_400)]);
    ledger.extend(outcome.capacity_events.iter().cloned());

    // 6. While the block is live the rebalance has nothing to do; once it expired it runs.
    ledger.apply(&mut scenario, 1_410);
    assert!(rebalance(&Problem::new(&scenario).expect("valid")).steps.is_empty());
    ledger.apply(&mut scenario, 1_600);
    let problem = Problem::new(&scenario).expect("valid");
    let plan = rebalance(&problem);
    let outcome = execute_rebalance(&problem, &plan, &StepExecution::new(1_600).launched("new-1", "i-6"))
        .expect("describes the plan");
    assert_eq!(outcome.failure, None);
    assert_eq!(
        view(&outcome.fleet),
        (
            vec![instance("i-1", P5, "a", false), instance("i-5", P5, "a", false), instance("i-6", P5, "b", false)],
            vec![copies("llm", "i-1", 1), copies("chat", "i-5", 2), copies("llm", "i-6", 1)]
        )
    );
    assert_eq!(outcome.released.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(), ["i-4"]);
    scenario.fleet = outcome.fleet;
    ledger.apply(&mut scenario, 1_600);
    let problem = Problem::new(&scenario).expect("the executed fleet is a valid fleet");
    assert!(plan_greedy(&problem).actions.is_empty(), "nothing left to do");
}

/// The drained fleet of step 3 above, before its rebalance.
fn drained() -> (Problem, RebalancePlan) {
    let mut scenario = scenario();
    scenario.fleet = ScenarioBuilder::new(["a", "b"])
        .fleet_instance("i-1", P5, "a", false)
        .fleet_instance("i-3", P5, "a", false)
        .fleet_instance("i-4", G6, "b", false)
        .fleet_copies("llm", "i-1", 1)
        .fleet_copies("chat", "i-3", 2)
        .fleet_copies("llm", "i-4", 1)
        .draining("i-3")
        .build()
        .expect("valid scenario")
        .fleet;
    let problem = Problem::new(&scenario).expect("valid");
    let plan = rebalance(&problem);
    assert_eq!(plan.launches().count(), 2);
    (problem, plan)
}

#[test]
fn a_failed_launch_leaves_the_fleet_as_after_the_previous_step_and_abandons_its_step_launches() {
    let (problem, plan) = drained();
    let after_first = execute_rebalance(&problem, &plan, &StepExecution::new(0)).expect("valid");
    assert_eq!(after_first.steps_completed, 2);
    let first_step_only = {
        let mut one = plan.clone();
        one.steps.truncate(1);
        execute_rebalance(&problem, &one, &StepExecution::new(0)).expect("valid")
    };
    // Step 2's launch fails: the fleet is exactly the one after step 1.
    let outcome = execute_rebalance(
        &problem,
        &plan,
        &StepExecution::new(0).launched("new-1", "new-1").launch_failed("new-2", LaunchFailure::Other),
    )
    .expect("valid");
    assert_eq!(outcome.fleet, first_step_only.fleet);
    assert!(outcome.capacity_events.iter().all(|record| record.event == CapacityEventKind::Launched));
    // Step 1 with a second launch reported as launched after the failure (launched in parallel):
    // it is abandoned — empty, so the caller terminates it.
    let mut parallel = plan.clone();
    let second = parallel.steps[1].launch.remove(0);
    parallel.steps[0].launch.insert(0, second);
    let outcome = execute_rebalance(
        &problem,
        &parallel,
        &StepExecution::new(7).launch_failed("new-2", LaunchFailure::InsufficientCapacity).launched("new-1", "i-9"),
    )
    .expect("valid");
    assert_eq!(outcome.fleet, problem_fleet(&problem));
    assert_eq!(outcome.abandoned.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(), ["i-9"]);
    assert!(outcome.launched.is_empty() && outcome.released.is_empty());
    assert_eq!(
        outcome.capacity_events,
        vec![
            event(P5, "a", CapacityEventKind::Launched, 7),
            event(P5, "b", CapacityEventKind::InsufficientCapacity, 7),
        ]
    );
}

fn problem_fleet(problem: &Problem) -> Fleet {
    FinalFleet::apply(problem, &[]).0.to_fleet(problem)
}

#[test]
fn executions_that_do_not_describe_the_plan_are_refused_with_every_mistake_named() {
    let (problem, plan) = drained();
    let error = execute_rebalance(
        &problem,
        &plan,
        &StepExecution::new(0)
            .launch_failed("new-1", LaunchFailure::InsufficientCapacity)
            .launched("new-2", "i-7")
            .launched("new-9", "i-8")
            .move_failed(1, 0)
            .move_failed(5, 0)
            .release_failed("i-4"),
    )
    .expect_err("mistakes");
    assert_eq!(
        error.to_string(),
        [
            "StepExecution.launches[\"new-2\"]: never attempted: execution stopped in step 0",
            "StepExecution.launches[\"new-9\"]: the plan does not launch this id",
            "StepExecution.failed_moves[1, 0]: never attempted: execution stopped before it",
            "StepExecution.failed_moves[5, 0]: the plan has no such move",
            "StepExecution.failed_releases[\"i-4\"]: the executed steps do not release this instance",
        ]
        .join("\n")
    );
    // A real id already in use, and a plan releasing an instance that still holds copies.
    let error = execute_rebalance(&problem, &plan, &StepExecution::new(0).launched("new-1", "i-4")).expect_err("taken");
    assert_eq!(error.to_string(), "StepExecution.launched(\"new-1\"): \"i-4\" is already an instance id");
    let mut lossy = plan.clone();
    lossy.steps[0].moves.pop();
    let error = execute_rebalance(&problem, &lossy, &StepExecution::new(0)).expect_err("would lose a copy");
    assert_eq!(error.to_string(), "Steps[0].Release[0]: i-3 still holds 1 copy");
}

#[test]
fn a_failed_release_keeps_the_instance_running_and_execution_goes_on() {
    let (problem, plan) = drained();
    let outcome = execute_rebalance(&problem, &plan, &StepExecution::new(0).release_failed("i-3")).expect("valid");
    assert_eq!(outcome.steps_completed, 2);
    assert_eq!(outcome.released.iter().map(|i| i.instance_id.as_str()).collect::<Vec<_>>(), ["i-4"]);
    let kept = outcome.fleet.instances.iter().find(|i| i.instance_id == "i-3").expect("still runs");
    assert_eq!(kept.state.map(|state| state.as_str()), Some("Draining"));
    assert!(outcome.fleet.copies.iter().all(|copy| copy.instance_id != "i-3"), "emptied");
}

#[test]
fn final_fleet_to_fleet_matches_the_executed_fleet() {
    let (problem, plan) = drained();
    let outcome = execute_rebalance(&problem, &plan, &StepExecution::new(0)).expect("valid");
    assert_eq!(plan.final_fleet(&problem).to_fleet(&problem), outcome.fleet);
    assert_eq!(problem_fleet(&problem).instances[1].state.map(|state| state.as_str()), Some("Draining"));
}
