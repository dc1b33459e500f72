//! One harness, every solver backend: the exact planner must reach the same proven optimum
//! whichever integer-programming backend solves its levels. With the `cbc` feature this
//! cross-checks microlp against an independent solver (CBC), on the bundled scenarios and on
//! random small scenarios, also through the plain slot formulation (another model of the same
//! problem), so a wrong cut or a wrong solver answer shows up as a disagreement.

use crate::common;

use std::time::Duration;

use fleetplan::backend::{good_lp, GoodLp, Microlp, MipBackend};
use fleetplan::{verify, ExactPlanner, Plan, Problem, Status};
use proptest::prelude::*;

/// Every backend this build has, by name.
fn backends() -> Vec<(&'static str, ExactPlanner)> {
    #[allow(unused_mut)]
    let mut list = vec![
        ("microlp", ExactPlanner::new().backend(Microlp)),
        ("good_lp/microlp", ExactPlanner::new().backend(GoodLp::new(good_lp::microlp))),
    ];
    #[cfg(feature = "cbc")]
    list.push(("good_lp/cbc", ExactPlanner::new().backend(GoodLp::new(fleetplan::backend::quiet_cbc))));
    list
}

/// The portfolio of microlp and CBC proves what microlp alone proves, on one bundled scenario
/// (the random cross-checks run each backend alone; a portfolio's choice between two runs is
/// checked against its parts in `a_portfolio_keeps_the_better_plan_of_its_two_backends`).
#[cfg(feature = "cbc")]
#[test]
fn a_portfolio_with_cbc_proves_the_optimum_of_a_bundled_scenario() {
    let problem = common::bundled_problem("seed-az-balance.json");
    let alone = ExactPlanner::new().time_limit(Duration::from_secs(30)).plan(&problem);
    let portfolio = ExactPlanner::new()
        .beside(GoodLp::new(fleetplan::backend::quiet_cbc))
        .time_limit(Duration::from_secs(30))
        .plan(&problem);
    assert_valid(&problem, &portfolio, "microlp + cbc");
    assert_eq!((alone.status, portfolio.status), (Status::Optimal, Status::Optimal));
    assert_eq!(portfolio.objective, alone.objective);
}

/// A plan is valid unless the problem has none (`Infeasible`: MinInstanceCount unreachable).
fn assert_valid(problem: &Problem, plan: &Plan, what: &str) {
    if plan.status == Status::Infeasible {
        return;
    }
    let violations = verify(problem, plan);
    assert!(violations.is_empty(), "{what}: {violations:?}");
    if let Some(bound) = &plan.bound {
        assert!(bound.key() <= plan.objective.key(), "{what}: bound {bound:?} above {:?}", plan.objective);
    }
}

#[test]
#[ignore = "long cross-check (about 20 s): .ci/run runs it with CBC, `cargo test --features cli,cbc --test cross_checks -- --include-ignored`"]
fn every_backend_proves_the_same_optimum_on_bundled_scenarios() {
    let scenarios = common::bundled_scenarios();
    assert!(scenarios.len() >= 5);
    for (name, _) in &scenarios {
        let problem = common::bundled_problem(name);
        let mut optimum = None;
        for (backend, planner) in backends() {
            let plan = planner.clone().time_limit(Duration::from_secs(30)).plan(&problem);
            let what = format!("{name} with {backend}");
            assert_valid(&problem, &plan, &what);
            assert_eq!(plan.status, Status::Optimal, "{what}: {:?}", plan.stop_reason);
            match &optimum {
                None => optimum = Some(plan.objective.clone()),
                Some(first) => assert_eq!(&plan.objective, first, "{what} disagrees with microlp"),
            }
        }
    }
}

#[test]
fn backend_names_say_which_solver_ran() {
    let names: Vec<String> = backends().iter().map(|(_, planner)| planner.backend_name()).collect();
    assert_eq!(names[0], "microlp");
    assert_eq!(names[1], "good_lp/Microlp");
    assert_eq!(Microlp.name(), "microlp");
    let portfolio = ExactPlanner::new().beside(GoodLp::new(good_lp::microlp));
    assert_eq!(portfolio.backend_name(), "microlp + good_lp/Microlp");
}

proptest! {
    // Three planner runs per case: a few cases keep the suite fast.
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// A portfolio keeps the better of its two runs: its plan is exactly as good as the better of
    /// the two planners run alone (node limits, no deadline: every run is deterministic), and it
    /// verifies.
    #[test]
    fn a_portfolio_keeps_the_better_plan_of_its_two_backends(problem in common::problem(common::Config::SMALL)) {
        let first = ExactPlanner::new().node_limit(8);
        let second = || GoodLp::new(good_lp::microlp);
        let alone = [first.clone().plan(&problem), first.clone().backend(second()).plan(&problem)];
        let both = first.beside(second()).plan(&problem);
        let best = alone.iter().map(|plan| plan.objective.key()).min();
        prop_assert_eq!(Some(both.objective.key()), best);
        if both.status != Status::Infeasible {
            prop_assert!(verify(&problem, &both).is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    /// Two proven optima of the same problem have the same objective, whichever backend and
    /// whichever formulation (aggregated with cuts, or the plain slot model) proved them.
    #[test]
    fn backends_and_formulations_agree_on_proven_optima(problem in common::problem(common::Config::SMALL)) {
        agree_on_proven_optima(&problem)?;
    }
}

/// The case the old strategy's regression file held (`backends.proptest-regressions`):
/// MinInstanceCount 1 with the only type blocked in the only AZ (Infeasible for every backend).
#[test]
fn backends_agree_on_an_unreachable_minimum() {
    let text = serde_json::json!({
        "AvailabilityZones": ["zone-a"],
        "InstanceTypes": [{"InstanceType": "ml.test0.xlarge", "AcceleratorCount": 1, "AcceleratorMemoryGiB": 24,
            "VCpuCount": 8, "MemoryInMb": 32768}],
        "Capacity": [{"InstanceType": "ml.test0.xlarge", "AvailabilityZone": "zone-a", "Available": 0}],
        "Endpoint": {"EndpointName": "ep", "VariantName": "AllTraffic",
            "InstancePools": [{"InstanceType": "ml.test0.xlarge", "Priority": 1}],
            "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 1}},
        "InferenceComponents": [{"InferenceComponentName": "ic-0", "RuntimeConfig": {"CopyCount": 0},
            "Specification": {"ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 0, "MinMemoryRequiredInMb": 128},
                "SchedulingConfig": {"PlacementStrategy": "BINPACK"}}}]
    })
    .to_string();
    let problem = Problem::from_json(&text).unwrap();
    agree_on_proven_optima(&problem).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The same on medium scenarios (8 components, 5 pool types, 8 existing instances).
    #[test]
    #[ignore = "long cross-check (about 20 s): .ci/run runs it with CBC, `cargo test --features cli,cbc --test cross_checks -- --include-ignored`"]
    fn backends_agree_on_medium_scenarios(problem in common::problem(common::Config::MEDIUM)) {
        agree_on_proven_optima(&problem)?;
    }
}

fn agree_on_proven_optima(problem: &Problem) -> Result<(), TestCaseError> {
    let reference = ExactPlanner::new().node_limit(200_000).plan(problem);
    assert_valid(problem, &reference, "microlp");
    #[allow(unused_mut)]
    let mut others: Vec<(String, Plan)> = backends()
        .into_iter()
        .skip(1)
        .map(|(name, planner)| (name.to_string(), planner.time_limit(Duration::from_secs(20)).plan(problem)))
        .collect();
    #[cfg(feature = "cbc")]
    others.push((
        "plain slot model on cbc".to_string(),
        ExactPlanner::new()
            .plain_slot_model()
            .backend(GoodLp::new(fleetplan::backend::quiet_cbc))
            .time_limit(Duration::from_secs(20))
            .plan(problem),
    ));
    for (name, plan) in &others {
        assert_valid(problem, plan, name);
        prop_assert_eq!(
            plan.status == Status::Infeasible,
            reference.status == Status::Infeasible,
            "{} and microlp disagree on feasibility",
            name
        );
        if reference.status == Status::Infeasible {
            continue;
        }
        if reference.status == Status::Optimal && plan.status == Status::Optimal {
            prop_assert_eq!(plan.objective.key(), reference.objective.key(), "{} disagrees with microlp", name);
        }
        // A proven optimum is never beaten by another backend's plan, proven or not.
        if reference.status == Status::Optimal {
            prop_assert!(reference.objective.key() <= plan.objective.key(), "{} beat a proven optimum", name);
        }
        if plan.status == Status::Optimal {
            prop_assert!(plan.objective.key() <= reference.objective.key(), "microlp beat {}'s proven optimum", name);
        }
    }
    Ok(())
}
