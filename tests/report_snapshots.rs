//! Snapshots of the reliability report (table, SVG, JSON) for bundled scenarios, for their
//! current fleet and for a fleet after a hand-built plan.

mod common;

use fleetplan::explain::unplaced;
use fleetplan::{
    objective, verify, Action, FinalFleet, Plan, Problem, ReliabilityReport, SolverKind, Status, StopReason,
};

fn launch(id: &str, instance_type: &str, az: &str) -> Action {
    Action::LaunchInstance {
        instance_id: id.into(),
        instance_type: instance_type.into(),
        availability_zone: az.into(),
        reserved: false,
    }
}

fn place(component: &str, id: &str) -> Action {
    Action::PlaceCopy { component: component.into(), instance_id: id.into(), model_name: None }
}

/// A plan built from actions the way engines do: objective and Unplaced from the shared code.
fn plan_of(problem: &Problem, actions: Vec<Action>) -> Plan {
    let (fleet, violations) = FinalFleet::apply(problem, &actions);
    assert!(violations.is_empty(), "{violations:?}");
    Plan {
        solver: SolverKind::Greedy,
        status: Status::Feasible,
        stop_reason: StopReason::Completed,
        objective: objective(problem, &fleet),
        unplaced: unplaced(problem, &fleet),
        actions,
        bound: None,
        warnings: problem.warnings().to_vec(),
        omitted: Default::default(),
    }
}

/// seed-az-balance placed by hand: two g6e (priority 1), one g6 (priority 2) in us-east-1a.
fn seed_az_balance_plan(problem: &Problem) -> Plan {
    let plan = plan_of(
        problem,
        vec![
            launch("new-1", "ml.g6e.12xlarge", "us-east-1a"),
            launch("new-2", "ml.g6e.12xlarge", "us-east-1b"),
            launch("new-3", "ml.g6.12xlarge", "us-east-1a"),
            place("agent-planner", "new-1"),
            place("agent-summarizer", "new-1"),
            place("agent-planner", "new-2"),
            place("agent-planner", "new-2"),
            place("agent-router", "new-2"),
            place("agent-planner", "new-3"),
            place("agent-router", "new-3"),
        ],
    );
    let violations = verify(problem, &plan);
    assert!(violations.is_empty(), "{violations:?}");
    plan
}

#[test]
fn seed_az_balance_current_fleet() {
    let problem = common::bundled_problem("seed-az-balance.json");
    let report = ReliabilityReport::build(&problem);
    assert_eq!(report.instance_count, 0);
    insta::assert_snapshot!("seed_az_balance_table", report.to_table());
    insta::assert_snapshot!("seed_az_balance_svg", report.to_svg());
    insta::assert_snapshot!("seed_az_balance_json", report.to_json());
}

#[test]
fn seed_az_balance_after_a_plan() {
    let problem = common::bundled_problem("seed-az-balance.json");
    let plan = seed_az_balance_plan(&problem);
    let report = ReliabilityReport::for_plan(&problem, &plan);
    // Numbers worked out by hand from the actions above.
    let copies: Vec<(&str, &[u64])> =
        report.components.iter().map(|c| (c.inference_component_name.as_str(), c.copies_per_az.as_slice())).collect();
    assert_eq!(
        copies,
        [("agent-planner", &[2u64, 2][..]), ("agent-router", &[1, 1][..]), ("agent-summarizer", &[1, 0][..])]
    );
    let planner = &report.components[0];
    assert_eq!((planner.copies_left_after_az_loss, planner.copies_left_after_instance_loss), (2, 2));
    assert_eq!(planner.worst_instance.as_deref(), Some("new-2"));
    assert_eq!(report.components[2].balance_excess, 1); // CopyCount 1 under MaxImbalance 0
    assert_eq!(report.instances_per_az, [2, 1]);
    // 2 × 10.49 + 4.60
    assert!((report.cost_per_hour - 25.58).abs() < 1e-9);
    assert_eq!(report.cost_per_hour, plan.objective.cost());
    insta::assert_snapshot!("seed_az_balance_plan_table", report.to_table());
    insta::assert_snapshot!("seed_az_balance_plan_svg", report.to_svg());
}

#[test]
fn fragmented_fleet_current_fleet() {
    let problem = common::bundled_problem("fragmented-fleet.json");
    let report = ReliabilityReport::build(&problem);
    assert_eq!(report.instance_count, 26);
    insta::assert_snapshot!("fragmented_fleet_table", report.to_table());
    insta::assert_snapshot!("fragmented_fleet_svg", report.to_svg());
}

#[test]
fn every_bundled_scenario_reports_deterministically() {
    for (name, text) in common::bundled_scenarios() {
        let problem = Problem::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let first = ReliabilityReport::build(&problem);
        let second = ReliabilityReport::build(&problem);
        assert_eq!(first.to_table(), second.to_table(), "{name}");
        assert_eq!(first.to_svg(), second.to_svg(), "{name}");
        assert_eq!(first.to_json(), second.to_json(), "{name}");
        // Every component has one row and one SVG row; every AZ a column.
        assert_eq!(first.components.len(), problem.components().len(), "{name}");
        let svg = first.to_svg();
        assert_eq!(svg.matches("<rect").count(), problem.components().len() * (problem.azs().len() + 1), "{name}");
        // Copies left after losing an AZ or an instance never exceed what is placed.
        for component in &first.components {
            assert!(component.copies_left_after_az_loss <= component.placed, "{name}");
            assert!(component.copies_left_after_instance_loss <= component.placed, "{name}");
            assert_eq!(component.copies_per_az.iter().sum::<u64>(), component.placed, "{name}");
        }
    }
}

#[test]
fn seed_multi_gpu_llm_partial_plan_explained() {
    let problem = common::bundled_problem("seed-multi-gpu-llm.json");
    let mut reserved = launch("new-1", "ml.p5.48xlarge", "us-east-1c");
    if let Action::LaunchInstance { reserved: flag, .. } = &mut reserved {
        *flag = true;
    }
    let mut actions = vec![reserved, launch("new-2", "ml.p5.48xlarge", "us-east-1a")];
    actions.extend(["new-1", "new-1", "new-2"].map(|id| place("llama-70b", id)));
    actions.extend(["new-2", "new-2", "new-2"].map(|id| place("embedder", id)));
    let plan = plan_of(&problem, actions);
    assert!(verify(&problem, &plan).is_empty());
    // llama-70b: 3 of 6 placed; embedder complete.
    assert_eq!(plan.unplaced.len(), 1);
    assert_eq!(plan.unplaced[0].copy_count, 3);
    let mut text = String::new();
    for entry in &plan.unplaced {
        text.push_str(&format!("{} ({} copies)\n", entry.inference_component_name, entry.copy_count));
        for reason in &entry.reasons {
            text.push_str(&format!("  - {reason}\n"));
        }
    }
    insta::assert_snapshot!("seed_multi_gpu_llm_partial_unplaced", text);
    insta::assert_snapshot!(
        "seed_multi_gpu_llm_partial_table",
        ReliabilityReport::for_plan(&problem, &plan).to_table()
    );
}
