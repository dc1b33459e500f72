//! One table-driven harness: every bundled scenario against every planning engine.
//!
//! Each engine's plan must pass `verify`, be byte-for-byte deterministic, and the exact planner
//! must never be worse than the greedy one.
mod common;

use std::time::Duration;

use fleetplan::{plan_greedy, verify, ExactPlanner, Plan, Problem, Status};

/// A planning engine under test.
type Engine = Box<dyn Fn(&Problem) -> Plan>;

/// The engines under test: name and how to run it.
fn engines() -> Vec<(&'static str, Engine)> {
    vec![
        ("greedy", Box::new(plan_greedy)),
        ("exact", Box::new(|problem: &Problem| ExactPlanner::new().time_limit(Duration::from_secs(2)).plan(problem))),
    ]
}

#[test]
fn every_scenario_every_engine_verifies_and_is_deterministic() {
    let scenarios = common::bundled_scenarios();
    assert!(scenarios.len() >= 5, "bundled scenarios missing");
    for (name, text) in &scenarios {
        let problem = Problem::from_json(text).unwrap_or_else(|error| panic!("{name}: {error}"));
        for (engine, run) in engines() {
            let plan = run(&problem);
            let violations = verify(&problem, &plan);
            assert!(violations.is_empty(), "{name} / {engine}: {violations:#?}");
            if engine == "greedy" {
                let again = run(&problem);
                assert_eq!(plan, again, "{name} / {engine}: not deterministic");
            }
            if plan.status == Status::Optimal {
                assert_eq!(plan.bound, None, "{name} / {engine}: an optimal plan needs no bound");
            }
        }
    }
}

#[test]
fn exact_is_never_worse_than_greedy_on_bundled_scenarios() {
    for (name, text) in common::bundled_scenarios() {
        let problem = Problem::from_json(&text).unwrap();
        let greedy = plan_greedy(&problem);
        let exact = ExactPlanner::new().time_limit(Duration::from_secs(2)).plan(&problem);
        assert!(
            exact.objective.key() <= greedy.objective.key(),
            "{name}: exact {:?} worse than greedy {:?}",
            exact.objective,
            greedy.objective
        );
    }
}
