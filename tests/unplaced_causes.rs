//! Structured causes of unplaced copies (`Unplaced::causes`), proven vs not-proven wording, and
//! the explanation of an `Infeasible` status, each on a small hand-built scenario.

use fleetplan::__internal::unplaced;
use fleetplan::{infeasibility, Resource};
use fleetplan::{
    plan_greedy, plan_table, CapacityEvent, CapacityEventKind, FinalFleet, Infeasibility, Plan, Problem, Scenario,
    ScenarioBuilder, Status, Unplaced, UnplacedCause,
};

const AZS: [&str; 2] = ["us-east-1a", "us-east-1b"];
const G6_12X: &str = "ml.g6.12xlarge";
const G6_1X: &str = "ml.g6.xlarge";

fn greedy(scenario: &Scenario) -> Plan {
    plan_greedy(&Problem::new(scenario).expect("valid scenario"))
}

fn only_unplaced(plan: &Plan) -> &Unplaced {
    assert_eq!(plan.unplaced.len(), 1, "{:?}", plan.unplaced);
    &plan.unplaced[0]
}

fn exhausted(az: &str, available: u32, reserved: u32, launched: u32) -> UnplacedCause {
    UnplacedCause::CapacityExhausted {
        instance_type: G6_12X.into(),
        availability_zone: az.into(),
        available,
        reserved,
        launched,
    }
}

fn full(instances: u64, need: u64) -> UnplacedCause {
    UnplacedCause::InstancesFull {
        instance_type: G6_12X.into(),
        resource: Resource::Accelerators,
        need,
        most_free: 0,
        instances,
    }
}

#[test]
fn exhausted_capacity_names_type_az_and_numbers() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(1), 0)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 5, 4, 4.0, 16_384)
        .build()
        .unwrap();
    let plan = greedy(&scenario);
    let unplaced = only_unplaced(&plan);
    assert_eq!(unplaced.copy_count, 4);
    assert_eq!(unplaced.causes, vec![full(1, 4), exhausted("us-east-1a", 1, 0, 1), exhausted("us-east-1b", 0, 0, 0)]);
    assert_eq!(
        unplaced.causes[1].to_string(),
        "ml.g6.12xlarge has no capacity left in us-east-1a (Available 1, Reserved 0, 1 launched by the plan)"
    );
    assert_eq!(unplaced.causes[0].to_string(), "ml.g6.12xlarge needs 4 accelerators per copy, 0 free (1 instance)");
}

#[test]
fn live_capacity_error_is_a_blocked_cause() {
    let mut scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 1, 1, 4.0, 16_384)
        .build()
        .unwrap();
    scenario.now = Some(1_100);
    scenario.capacity_error_ttl_seconds = Some(180);
    scenario.capacity_events = vec![CapacityEvent {
        instance_type: G6_12X.into(),
        availability_zone: "us-east-1a".into(),
        event: fleetplan::CapacityEventKind::InsufficientCapacity,
        time: 1_000,
    }];
    let plan = greedy(&scenario);
    let unplaced = only_unplaced(&plan);
    let blocked = UnplacedCause::CapacityBlocked {
        instance_type: G6_12X.into(),
        availability_zone: "us-east-1a".into(),
        event: CapacityEventKind::InsufficientCapacity,
        time: 1_000,
        until: 1_180,
    };
    assert_eq!(unplaced.causes, vec![blocked, exhausted("us-east-1b", 0, 0, 0)]);
    assert_eq!(
        unplaced.causes[0].to_string(),
        "ml.g6.12xlarge in us-east-1a blocked by InsufficientCapacity at 1000 until 1180"
    );
}

#[test]
fn max_instance_count_counts_the_launches_it_blocks() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .instance_limits(0, Some(1))
        .component("chat", 2, 4, 4.0, 16_384)
        .build()
        .unwrap();
    let plan = greedy(&scenario);
    let unplaced = only_unplaced(&plan);
    assert_eq!(unplaced.copy_count, 1);
    let max = UnplacedCause::MaxInstanceCount { max: 1, instances: 1, blocked_launches: 2 };
    assert_eq!(unplaced.causes, vec![full(1, 4), max]);
    assert_eq!(unplaced.causes[1].to_string(), "MaxInstanceCount 1 reached (1 instance; blocks 2 launch options)");
}

#[test]
fn a_copy_larger_than_every_type_is_too_large_and_no_type_is_eligible() {
    // Accelerators, then CPU, then memory: the first resource that does not fit is named.
    let cases = [
        (8, 4.0, 16_384, Resource::Accelerators, 8, 4),
        (1, 64.0, 16_384, Resource::MilliCpus, 64_000, 48_000),
        (1, 4.0, 300_000, Resource::MemoryMib, 300_000, 196_608),
    ];
    for (accelerators, cpus, memory, resource, need, has) in cases {
        let scenario =
            ScenarioBuilder::new(AZS).pool(G6_12X, 1).component("big", 1, accelerators, cpus, memory).build().unwrap();
        let plan = greedy(&scenario);
        let unplaced = only_unplaced(&plan);
        assert_eq!(
            unplaced.causes,
            vec![
                UnplacedCause::TooLarge { instance_type: G6_12X.into(), resource, need, has },
                UnplacedCause::NoEligibleType { pool_types: 1, without_specification: 0, too_small: 1 },
            ],
            "{resource:?}"
        );
    }
    let scenario = ScenarioBuilder::new(AZS).pool(G6_12X, 1).component("big", 1, 8, 4.0, 16_384).build().unwrap();
    let plan = greedy(&scenario);
    assert_eq!(
        only_unplaced(&plan).causes[0].to_string(),
        "one copy needs 8 accelerators, more than a whole ml.g6.12xlarge (4 accelerators)"
    );
}

#[test]
fn no_specification_and_too_small_together_leave_no_eligible_type() {
    // One specification, for ml.g6.xlarge (1 accelerator), but a copy needs 2.
    let mut scenario =
        ScenarioBuilder::new(AZS).pool(G6_12X, 1).pool(G6_1X, 2).component("chat", 1, 2, 1.0, 1_024).build().unwrap();
    let component = &mut scenario.inference_components[0];
    let mut specification = component.specification.take().expect("builder sets a specification");
    specification.instance_type = Some(G6_1X.into());
    component.specifications = Some(vec![specification]);
    let plan = greedy(&scenario);
    let unplaced = only_unplaced(&plan);
    assert_eq!(
        unplaced.causes,
        vec![
            UnplacedCause::TooLarge { instance_type: G6_1X.into(), resource: Resource::Accelerators, need: 2, has: 1 },
            UnplacedCause::NoEligibleType { pool_types: 2, without_specification: 1, too_small: 1 },
        ]
    );
    assert_eq!(
        unplaced.causes[1].to_string(),
        "no pool type can take a copy (2 pool types: 1 without specification, 1 too small)"
    );
}

#[test]
fn imbalance_of_the_placed_copies_is_a_cause() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(0), 0)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 5, 1, 4.0, 16_384)
        .max_imbalance("chat", 1)
        .fleet_instance("i-1", G6_12X, "us-east-1a", false)
        .fleet_copies("chat", "i-1", 4)
        .build()
        .unwrap();
    let plan = greedy(&scenario);
    let unplaced = only_unplaced(&plan);
    let imbalance = UnplacedCause::Imbalance { copies_per_az: vec![4, 0], max_imbalance: 1, excess: 3 };
    assert_eq!(
        unplaced.causes,
        vec![full(1, 1), exhausted("us-east-1a", 0, 0, 0), exhausted("us-east-1b", 0, 0, 0), imbalance]
    );
    assert_eq!(unplaced.causes[3].to_string(), "placed copies 4/0 exceed MaxImbalance 1 by 3");
}

#[test]
fn open_options_mean_not_placed_by_this_planner() {
    // The fleet before planning: every launch option is still open.
    let scenario = ScenarioBuilder::new(AZS).pool(G6_12X, 1).component("chat", 2, 1, 4.0, 16_384).build().unwrap();
    let problem = Problem::new(&scenario).expect("valid scenario");
    let (fleet, _) = FinalFleet::apply(&problem, &[]);
    let unplaced = unplaced(&problem, &fleet);
    assert_eq!(unplaced.len(), 1);
    assert_eq!(
        unplaced[0].causes,
        vec![UnplacedCause::NotPlacedByPlanner { instances_with_room: 0, open_launches: 2 }]
    );
    assert_eq!(
        unplaced[0].causes[0].to_string(),
        "not placed by this planner (0 instances with room, 2 launch options open)"
    );
}

#[test]
fn optimal_plans_report_the_shortfall_as_proven() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(0), 0)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 2, 1, 4.0, 16_384)
        .component("embed", 1, 1, 4.0, 16_384)
        .build()
        .unwrap();
    let mut plan = greedy(&scenario);
    assert_eq!(plan.status, Status::Feasible);
    assert!(!plan.unplaced_is_proven());
    assert_eq!(
        plan.unplaced_summaries(),
        ["2 copies of chat not placed by this planner", "1 copy of embed not placed by this planner"]
    );
    plan.status = Status::Optimal;
    assert!(plan.unplaced_is_proven());
    assert_eq!(plan.unplaced_summaries(), ["2 copies of chat cannot be placed", "1 copy of embed cannot be placed"]);
}

#[test]
fn the_plan_table_says_cannot_be_placed_only_for_optimal_plans() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(0), 0)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 2, 1, 4.0, 16_384)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).expect("valid scenario");
    let mut plan = plan_greedy(&problem);
    let unplaced_lines = |plan: &Plan| -> Vec<String> {
        let table = plan_table(&problem, plan);
        let section = table.split("\nUnplaced (2 copies)\n").nth(1).expect("an Unplaced section").to_string();
        section.lines().filter(|line| !line.starts_with("    - ")).map(str::to_string).collect()
    };
    assert_eq!(plan.status, Status::Feasible);
    assert_eq!(unplaced_lines(&plan), ["  2 copies of chat not placed by this planner"]);
    plan.status = Status::Optimal;
    assert_eq!(unplaced_lines(&plan), ["  2 copies of chat cannot be placed"]);
}

#[test]
fn causes_stay_out_of_the_plan_json() {
    let scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(0), 0)
        .capacity(G6_12X, "us-east-1b", Some(0), 0)
        .component("chat", 2, 1, 4.0, 16_384)
        .build()
        .unwrap();
    let plan = greedy(&scenario);
    assert_eq!(only_unplaced(&plan).causes.len(), 2);
    let json = plan.to_json();
    assert!(!json.contains("Causes"), "{json}");
    let read = Plan::from_json(&json).expect("own JSON reads back");
    assert!(read.unplaced[0].causes.is_empty());
    assert_eq!(read.unplaced[0].reasons, plan.unplaced[0].reasons);
}

fn infeasible_scenario() -> Scenario {
    let mut scenario = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(1), 1)
        .capacity(G6_12X, "us-east-1b", Some(3), 0)
        .instance_limits(5, None)
        .component("chat", 1, 1, 4.0, 16_384)
        .fleet_instance("i-1", G6_12X, "us-east-1a", false)
        .build()
        .unwrap();
    scenario.now = Some(1_100);
    scenario.capacity_error_ttl_seconds = Some(180);
    scenario.capacity_events = vec![CapacityEvent {
        instance_type: G6_12X.into(),
        availability_zone: "us-east-1b".into(),
        event: fleetplan::CapacityEventKind::ProvisioningTimeout,
        time: 1_000,
    }];
    scenario
}

#[test]
fn infeasible_status_is_explained_with_launchable_capacity() {
    let problem = Problem::new(&infeasible_scenario()).expect("valid scenario");
    let why = infeasibility(&problem).expect("MinInstanceCount 5 is out of reach");
    assert_eq!(why, Infeasibility { min_instances: 5, existing: 1, launchable: 2, blocked: 1 });
    let text = "MinInstanceCount 5 cannot be reached: 1 existing instance + 2 launchable (Available + Reserved over \
                pool types and AZs, 1 blocked by a capacity error not counted) = 3";
    assert_eq!(why.to_string(), text);
    let plan = plan_greedy(&problem);
    assert_eq!(plan.status, Status::Infeasible);
    let table = plan_table(&problem, &plan);
    assert!(table.contains(&format!("\nInfeasible: {text}\n")), "{table}");
}

#[test]
fn reachable_or_unlimited_min_instance_count_has_no_infeasibility() {
    let reachable = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(2), 0)
        .capacity(G6_12X, "us-east-1b", Some(1), 0)
        .instance_limits(3, None)
        .component("chat", 1, 1, 4.0, 16_384)
        .build()
        .unwrap();
    assert_eq!(infeasibility(&Problem::new(&reachable).expect("valid scenario")), None);
    // No capacity entry for us-east-1b: unlimited launches there.
    let unlimited = ScenarioBuilder::new(AZS)
        .pool(G6_12X, 1)
        .capacity(G6_12X, "us-east-1a", Some(0), 0)
        .instance_limits(50, None)
        .component("chat", 1, 1, 4.0, 16_384)
        .build()
        .unwrap();
    let problem = Problem::new(&unlimited).expect("valid scenario");
    assert_eq!(infeasibility(&problem), None);
    let plan = plan_greedy(&problem);
    assert!(!plan_table(&problem, &plan).contains("Infeasible:"));
}

#[test]
fn a_plan_read_back_from_its_json_equals_the_plan_causes_and_all() {
    // The fuzz targets compare a plan with its JSON round trip; causes stay out of the JSON.
    let text = r#"{"AvailabilityZones": ["a"],
        "Endpoint": {"EndpointName": "e", "VariantName": "v",
            "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}]},
        "Capacity": [{"InstanceType": "ml.g6.12xlarge", "AvailabilityZone": "a", "Available": 1}],
        "InferenceComponents": [{"InferenceComponentName": "big", "RuntimeConfig": {"CopyCount": 3},
            "Specification": {"ComputeResourceRequirements": {
                "NumberOfAcceleratorDevicesRequired": 4, "MinMemoryRequiredInMb": 1024}}}]}"#;
    let problem = fleetplan::Problem::from_json(text).unwrap();
    let plan = fleetplan::plan_greedy(&problem);
    assert_eq!(plan.unplaced.len(), 1);
    assert!(!plan.unplaced[0].causes.is_empty());
    let reread = fleetplan::Plan::from_json(&plan.to_json()).unwrap();
    assert_eq!(reread.unplaced, plan.unplaced);
    let serde_reread: fleetplan::Plan = serde_json::from_str(&plan.to_json()).unwrap();
    assert_eq!(serde_reread, plan);
}

/// Whether the grouped `reasons` (what the plan JSON carries) state `cause`: the wording of both
/// comes from `explain`'s one formatter, so a cause the reasons do not mention is a drift.
fn stated(cause: &UnplacedCause, reasons: &[String]) -> bool {
    let any = |test: &dyn Fn(&str) -> bool| reasons.iter().any(|reason| test(reason));
    match cause {
        UnplacedCause::CapacityExhausted { instance_type, availability_zone, available, .. } => any(&|reason| {
            reason.starts_with(&format!("{instance_type} has no capacity"))
                && reason.contains(availability_zone.as_str())
                && reason.contains(&format!("(Available {available}"))
        }),
        UnplacedCause::CapacityBlocked { instance_type, availability_zone, event, time, until } => any(&|reason| {
            reason.starts_with(&format!("{instance_type} in "))
                && reason.contains(availability_zone.as_str())
                && reason.ends_with(&format!("blocked by {event} at {time} until {until}"))
        }),
        UnplacedCause::TooLarge { .. } => any(&|reason| reason.starts_with(&format!("{cause} in "))),
        UnplacedCause::InstancesFull { instances, .. } => {
            // The cause says `(N instances)`, the reason `(N instances in <AZs>)`.
            let text = cause.to_string();
            let head = text.rsplit_once(" (").map_or(text.as_str(), |(head, _)| head);
            let count = format!("({instances} instance");
            any(&|reason| reason.starts_with(head) && reason.contains(&count))
        }
        UnplacedCause::MaxInstanceCount { .. } => reasons.contains(&cause.to_string()),
        UnplacedCause::NoEligibleType { .. } => {
            reasons.first().is_some_and(|header| header.contains(", 0/"))
                && !any(&|reason| reason.contains("could still launch"))
        }
        UnplacedCause::Imbalance { copies_per_az, max_imbalance, excess } => {
            let counts: Vec<String> = copies_per_az.iter().map(u64::to_string).collect();
            any(&|reason| {
                reason.starts_with(&format!("placed copies {} over ", counts.join("/")))
                    && reason.ends_with(&format!("exceed MaxImbalance {max_imbalance} by {excess}"))
            })
        }
        UnplacedCause::NotPlacedByPlanner { instances_with_room, open_launches } => {
            reasons.first().is_some_and(|header| {
                header.starts_with(&format!("{instances_with_room}/"))
                    && header.contains(&format!(" instances have room, {open_launches}/"))
            })
        }
        other => panic!("a new cause kind needs a rule here: {other:?}"),
    }
}

/// `0/N instances have room, 0/M launch options open` exactly when no cause says
/// "not placed by this planner".
fn header_agrees(unplaced: &Unplaced) -> bool {
    let header = unplaced.reasons.first().map(String::as_str).unwrap_or_default();
    let nothing_open = header.starts_with("0/") && header.contains(" instances have room, 0/");
    let not_placed = unplaced.causes.iter().any(|cause| matches!(cause, UnplacedCause::NotPlacedByPlanner { .. }));
    nothing_open != not_placed
}

mod reasons_and_causes_agree {
    use super::*;
    use crate::common;
    use proptest::prelude::*;

    fn check(problem: &Problem, fleet: &FinalFleet) -> Result<(), TestCaseError> {
        for unplaced in unplaced(problem, fleet) {
            prop_assert!(!unplaced.causes.is_empty(), "{unplaced:?}");
            prop_assert!(header_agrees(&unplaced), "{unplaced:?}");
            for cause in &unplaced.causes {
                prop_assert!(stated(cause, &unplaced.reasons), "{cause} not in {:?}", unplaced.reasons);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Before planning (every launch open) and after greedy (capacity used up, instances
        /// full, `MaxInstanceCount` reached): each cause is stated in the reasons.
        #[test]
        fn on_generated_fleets(problem in common::problem(common::Config::MEDIUM)) {
            let (before, _) = FinalFleet::apply(&problem, &[]);
            check(&problem, &before)?;
            let plan = plan_greedy(&problem);
            let (after, _) = FinalFleet::apply(&problem, &plan.actions);
            check(&problem, &after)?;
        }
    }
}

#[test]
fn a_cause_missing_from_the_reasons_is_caught() {
    let cause = exhausted("us-east-1b", 0, 0, 0);
    let reasons = ["0/0 instances have room, 0/2 launch options open".to_string()];
    assert!(!stated(&cause, &reasons));
    let with = [reasons[0].clone(), "ml.g6.12xlarge has no capacity in us-east-1a, us-east-1b (Available 0)".into()];
    assert!(stated(&cause, &with));
}
