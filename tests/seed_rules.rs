//! One test per rule the seeds state, run through the greedy planner, plus every bundled
//! scenario: the greedy plan verifies and is byte-for-byte deterministic.

use std::collections::BTreeMap;

use fleetplan::{plan_greedy, verify, Action, FinalFleet, Plan, Problem, ScenarioBuilder, Status};

fn scenario_file(name: &str) -> Problem {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn planned(problem: &Problem) -> Plan {
    let plan = plan_greedy(problem);
    let violations = verify(problem, &plan);
    assert!(violations.is_empty(), "greedy plan breaks rules: {violations:#?}\n{plan:#?}");
    plan
}

fn final_fleet(problem: &Problem, plan: &Plan) -> FinalFleet {
    let (fleet, violations) = FinalFleet::apply(problem, &plan.actions);
    assert!(violations.is_empty(), "{violations:?}");
    fleet
}

/// Copies of `component` per AZ name in the final fleet.
fn copies_per_az(problem: &Problem, plan: &Plan, component: &str) -> BTreeMap<String, u64> {
    let fleet = final_fleet(problem, plan);
    let index = problem.component_index(component).expect("component");
    let per_az = fleet.copies_per_az(problem);
    problem.azs().iter().cloned().zip(per_az[index].iter().copied()).collect()
}

/// Final instances as (type, AZ) names.
fn instances(problem: &Problem, plan: &Plan) -> Vec<(String, String)> {
    let fleet = final_fleet(problem, plan);
    let mut list: Vec<(String, String)> = fleet
        .instances
        .iter()
        .map(|i| (problem.instance_types()[i.type_index].name.clone(), problem.azs()[i.az_index].clone()))
        .collect();
    list.sort();
    list
}

#[test]
fn four_copies_max_imbalance_one_over_two_azs_split_two_and_two() {
    let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
        .pool("ml.g6.12xlarge", 1)
        .component("chat", 4, 1, 4.0, 16_384)
        .max_imbalance("chat", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let per_az = copies_per_az(&problem, &plan, "chat");
    assert_eq!(per_az.values().copied().collect::<Vec<_>>(), vec![2, 2]);
    assert_eq!(plan.objective.placed_copies, 4);
    assert_eq!(plan.objective.balance_excess, 0);
}

#[test]
fn two_copies_max_imbalance_zero_split_one_and_one() {
    let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
        .pool("ml.g6.12xlarge", 1)
        .component("router", 2, 1, 2.0, 8192)
        .max_imbalance("router", 0)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let per_az = copies_per_az(&problem, &plan, "router");
    assert_eq!(per_az.values().copied().collect::<Vec<_>>(), vec![1, 1]);
    assert_eq!(plan.objective.balance_excess, 0);
}

#[test]
fn seed_az_balance_scenario_meets_every_max_imbalance() {
    let problem = scenario_file("seed-az-balance.json");
    let plan = planned(&problem);
    assert_eq!(plan.objective.placed_copies, 7);
    // agent-summarizer has one copy with MaxImbalance 0 over two AZs: excess 1 is unavoidable.
    assert_eq!(plan.objective.balance_excess, 1);
    assert_eq!(copies_per_az(&problem, &plan, "agent-planner").values().copied().collect::<Vec<_>>(), vec![2, 2]);
    assert_eq!(copies_per_az(&problem, &plan, "agent-router").values().copied().collect::<Vec<_>>(), vec![1, 1]);
    // Everything fits on the priority-1 type.
    assert_eq!(plan.objective.instances_of_priority(2), 0);
}

#[test]
fn priority_one_out_of_capacity_in_one_az_falls_back_there_only() {
    let problem = scenario_file("seed-fallback-single-model.json");
    let plan = planned(&problem);
    assert_eq!(plan.objective.placed_copies, 4);
    assert_eq!(plan.objective.balance_excess, 0);
    let fleet = instances(&problem, &plan);
    let p5 = |az: &str| fleet.iter().filter(|(t, z)| t == "ml.p5.48xlarge" && z == az).count();
    let g6 = |az: &str| fleet.iter().filter(|(t, z)| t == "ml.g6.48xlarge" && z == az).count();
    // us-east-1a has one p5 available: it is used; the rest falls back to g6.
    assert_eq!(p5("us-east-1a"), 1);
    assert_eq!(g6("us-east-1a"), 1);
    // us-east-1b has no p5 capacity: priority 2 there.
    assert_eq!(p5("us-east-1b"), 0);
    assert_eq!(g6("us-east-1b"), 2);
    // The model build follows the type (ModelNameOverride on the fallback).
    for action in &plan.actions {
        if let Action::PlaceCopy { instance_id, model_name, .. } = action {
            let launched_type = plan.actions.iter().find_map(|a| match a {
                Action::LaunchInstance { instance_id: id, instance_type, .. } if id == instance_id => {
                    Some(instance_type.clone())
                }
                _ => None,
            });
            let expected = if launched_type.as_deref() == Some("ml.g6.48xlarge") { "llm-int4" } else { "llm-tp8" };
            assert_eq!(model_name.as_deref(), Some(expected));
        }
    }
}

#[test]
fn priority_one_is_used_wherever_it_has_capacity() {
    let scenario = ScenarioBuilder::new(["a", "b", "c"])
        .pool("ml.g6.12xlarge", 2)
        .pool("ml.g6e.12xlarge", 1)
        .capacity("ml.g6e.12xlarge", "b", Some(0), 0)
        .component("m", 6, 4, 4.0, 16_384)
        .max_imbalance("m", 0)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let fleet = instances(&problem, &plan);
    assert_eq!(fleet.iter().filter(|(t, _)| t == "ml.g6e.12xlarge").count(), 4);
    assert_eq!(fleet.iter().filter(|(t, z)| t == "ml.g6.12xlarge" && z == "b").count(), 2);
    assert_eq!(fleet.len(), 6);
}

#[test]
fn scale_in_removes_priority_two_instances_before_priority_one() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6e.12xlarge", 1)
        .pool("ml.g6.12xlarge", 2)
        .component("m", 2, 4, 4.0, 16_384)
        .fleet_instance("i-p1-a", "ml.g6e.12xlarge", "a", false)
        .fleet_instance("i-p2-a", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-p1-b", "ml.g6e.12xlarge", "a", false)
        .fleet_instance("i-p2-b", "ml.g6.12xlarge", "a", false)
        .fleet_copies("m", "i-p1-a", 1)
        .fleet_copies("m", "i-p2-a", 1)
        .fleet_copies("m", "i-p1-b", 1)
        .fleet_copies("m", "i-p2-b", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let terminated: Vec<&str> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::TerminateInstance { instance_id } => Some(instance_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(terminated, vec!["i-p2-a", "i-p2-b"]);
    assert_eq!(plan.objective.placed_copies, 2);
    assert_eq!(plan.objective.instances_of_priority(2), 0);
    assert_eq!(plan.objective.instances_of_priority(1), 2);
    assert_eq!(plan.launches(), 0);
}

#[test]
fn scale_in_keeps_balance_before_preference() {
    // 2 AZs, MaxImbalance 0: going from 4 to 2 copies must leave 1 and 1, even though both
    // fallback instances sit in AZ b.
    let scenario = ScenarioBuilder::new(["a", "b"])
        .pool("ml.g6e.12xlarge", 1)
        .pool("ml.g6.12xlarge", 2)
        .component("m", 2, 4, 4.0, 16_384)
        .max_imbalance("m", 0)
        .fleet_instance("i-1", "ml.g6e.12xlarge", "a", false)
        .fleet_instance("i-2", "ml.g6e.12xlarge", "a", false)
        .fleet_instance("i-3", "ml.g6.12xlarge", "b", false)
        .fleet_instance("i-4", "ml.g6.12xlarge", "b", false)
        .fleet_copies("m", "i-1", 1)
        .fleet_copies("m", "i-2", 1)
        .fleet_copies("m", "i-3", 1)
        .fleet_copies("m", "i-4", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.objective.balance_excess, 0);
    assert_eq!(copies_per_az(&problem, &plan, "m").values().copied().collect::<Vec<_>>(), vec![1, 1]);
    assert_eq!(plan.objective.instances_of_priority(2), 1);
}

#[test]
fn a_four_accelerator_copy_is_never_split() {
    let problem = scenario_file("seed-multi-gpu-llm.json");
    let plan = planned(&problem);
    let fleet = final_fleet(&problem, &plan);
    let llm = problem.component_index("llama-70b").unwrap();
    for instance in &fleet.instances {
        let info = &problem.instance_types()[instance.type_index];
        let per_copy =
            problem.components()[llm].requirements[instance.type_index].as_ref().map(|r| r.resources.accelerators);
        let copies = u64::from(instance.copies_of(llm));
        if copies > 0 {
            // Every copy's devices come from this one instance.
            assert!(copies * per_copy.unwrap() <= info.capacity.accelerators, "{}", instance.id);
        }
    }
    // 4 accelerators per copy on an 8-accelerator p5: at most two copies per p5.
    assert!(fleet
        .instances
        .iter()
        .filter(|i| problem.instance_types()[i.type_index].name == "ml.p5.48xlarge")
        .all(|i| i.copies_of(llm) <= 2));
    assert_eq!(plan.objective.placed_copies, 9);
}

#[test]
fn reservations_are_used_before_on_demand() {
    let problem = scenario_file("seed-multi-gpu-llm.json");
    let plan = planned(&problem);
    // us-east-1c has one reserved p5 slot and no on-demand p5: the slot is taken and flagged.
    let reserved: Vec<(&str, &str)> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::LaunchInstance { instance_type, availability_zone, reserved: true, .. } => {
                Some((instance_type.as_str(), availability_zone.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(reserved, vec![("ml.p5.48xlarge", "us-east-1c")]);

    // With a reservation and unlimited on-demand, the first launch is the reserved one.
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .capacity("ml.g6.12xlarge", "a", None, 2)
        .component("m", 3, 4, 4.0, 16_384)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let flags: Vec<bool> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::LaunchInstance { reserved, .. } => Some(*reserved),
            _ => None,
        })
        .collect();
    assert_eq!(flags, vec![true, true, false]);
}

#[test]
fn max_instance_count_caps_launches_and_reports_the_shortfall() {
    let scenario = ScenarioBuilder::new(["a", "b"])
        .pool("ml.g6.12xlarge", 1)
        .instance_limits(0, Some(3))
        .component("m", 5, 4, 4.0, 16_384)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.launches(), 3);
    assert_eq!(plan.objective.placed_copies, 3);
    assert_eq!(plan.unplaced.len(), 1);
    assert_eq!(plan.unplaced[0].inference_component_name, "m");
    assert_eq!(plan.unplaced[0].copy_count, 2);
    assert!(!plan.unplaced[0].reasons.is_empty());
}

#[test]
fn min_instance_count_is_met_even_without_copies() {
    let scenario = ScenarioBuilder::new(["a", "b"])
        .pool("ml.g6.12xlarge", 1)
        .instance_limits(3, Some(5))
        .component("m", 1, 1, 1.0, 1024)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.status, Status::Feasible);
    assert_eq!(final_fleet(&problem, &plan).instances.len(), 3);
    assert_eq!(plan.objective.placed_copies, 1);
}

#[test]
fn min_instance_count_keeps_the_best_idle_instances() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6e.12xlarge", 1)
        .pool("ml.g6.12xlarge", 2)
        .capacity("ml.g6e.12xlarge", "a", Some(0), 0)
        .capacity("ml.g6.12xlarge", "a", Some(0), 0)
        .instance_limits(1, None)
        .component("m", 0, 1, 1.0, 1024)
        .fleet_instance("i-fallback", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-preferred", "ml.g6e.12xlarge", "a", false)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    let kept: Vec<String> = final_fleet(&problem, &plan).instances.iter().map(|i| i.id.clone()).collect();
    assert_eq!(kept, vec!["i-preferred"]);
    assert_eq!(
        plan.actions,
        vec![Action::TerminateInstance { instance_id: "i-fallback".into() }],
        "only the fallback instance is released"
    );
}

#[test]
fn unreachable_min_instance_count_is_infeasible() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .capacity("ml.g6.12xlarge", "a", Some(1), 0)
        .instance_limits(2, None)
        .component("m", 1, 1, 1.0, 1024)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = plan_greedy(&problem);
    assert_eq!(plan.status, Status::Infeasible);
    assert_eq!(plan.launches(), 1);
    assert_eq!(plan.objective.placed_copies, 1);
}

#[test]
fn fleet_above_max_launches_nothing_and_releases_idle_instances() {
    // Two busy instances, MaxInstanceCount 1: nothing may be launched. The component needs more
    // copies: the idle i-3 takes one (it then cannot be released); the idle i-4 of a type the
    // component cannot use is released.
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .pool("ml.g6.2xlarge", 2)
        .instance_limits(0, Some(1))
        .component("m", 4, 4, 4.0, 16_384)
        .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-3", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-4", "ml.g6.2xlarge", "a", false)
        .fleet_copies("m", "i-1", 1)
        .fleet_copies("m", "i-2", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.launches(), 0);
    assert_eq!(
        plan.actions,
        vec![
            Action::PlaceCopy { component: "m".into(), instance_id: "i-3".into(), model_name: None },
            Action::TerminateInstance { instance_id: "i-4".into() },
        ]
    );
    assert_eq!(plan.unplaced.iter().map(|u| u.copy_count).sum::<u64>(), 1);
}

#[test]
fn partial_deployment_reports_the_right_shortfall() {
    // One p5 in us-east-1a, none in us-east-1b, no fallback: 4 whole-instance copies, 1 placed.
    let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
        .pool("ml.p5.48xlarge", 1)
        .capacity("ml.p5.48xlarge", "us-east-1a", Some(1), 0)
        .capacity("ml.p5.48xlarge", "us-east-1b", Some(0), 0)
        .component("llm", 4, 8, 8.0, 65_536)
        .component("embedder", 2, 9, 1.0, 1024)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.objective.placed_copies, 1);
    let missing: BTreeMap<&str, u64> =
        plan.unplaced.iter().map(|u| (u.inference_component_name.as_str(), u.copy_count)).collect();
    assert_eq!(missing, BTreeMap::from([("embedder", 2), ("llm", 3)]));
    assert!(plan.unplaced.iter().all(|u| !u.reasons.is_empty()));
}

#[test]
fn free_room_on_kept_instances_is_used_before_launching() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .component("old", 1, 1, 1.0, 1024)
        .component("new", 3, 1, 1.0, 1024)
        .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
        .fleet_copies("old", "i-1", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.launches(), 0);
    assert_eq!(plan.objective.placed_copies, 4);
}

#[test]
fn an_idle_fallback_instance_is_not_free_when_the_preferred_type_has_capacity() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6e.12xlarge", 1)
        .pool("ml.g6.12xlarge", 2)
        .component("m", 1, 1, 1.0, 1024)
        .fleet_instance("i-old", "ml.g6.12xlarge", "a", false)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let plan = planned(&problem);
    assert_eq!(plan.objective.instances_of_priority(1), 1);
    assert_eq!(plan.objective.instances_of_priority(2), 0);
    assert!(plan.actions.contains(&Action::TerminateInstance { instance_id: "i-old".into() }));
}

#[test]
fn every_bundled_scenario_plans_verifiably_and_deterministically() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 5);
    for name in names {
        let problem = scenario_file(&name);
        let first = plan_greedy(&problem);
        let violations = verify(&problem, &first);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
        let second = plan_greedy(&problem);
        assert_eq!(first.to_json(), second.to_json(), "{name}: two runs differ");
        assert!(first.objective.placed_copies > 0, "{name}");
    }
}
