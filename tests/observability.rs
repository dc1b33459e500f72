//! Observability: weighted utilisation (seed numbers), target tracking, launch/removal order,
//! roll-ups, explanations with counts that add up, and the reliability report against a
//! hand-computed case.

use crate::common;

use std::collections::BTreeMap;

use fleetplan::__internal::unplaced;
use fleetplan::metrics::*;
use fleetplan::{
    explain, Action, FinalFleet, InstanceTypeSpec, InstanceVerdict, LaunchVerdict, Problem, ReliabilityReport,
    ReliabilityWarning, Resource, ScenarioBuilder,
};
use proptest::prelude::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

fn seed_loads() -> Vec<TypeLoad> {
    vec![TypeLoad::new("ml.p5.48xlarge", 1, 18.0, 20.0), TypeLoad::new("ml.g6.48xlarge", 1, 7.0, 8.0)]
}

// ---------------------------------------------------------------- utilisation

#[test]
fn seed_numbers_are_reproduced() {
    let loads = seed_loads();
    // 18/20 = 0.9 and 7/8 = 0.875, averaged: 0.8875.
    assert!(close(metric_math_utilisation(&loads).unwrap(), 0.8875));
    // The plain average the seed warns about.
    assert!(close(naive_average_concurrency(&loads).unwrap(), 12.5));
    // One instance of each: (18 + 7) / (20 + 8).
    assert!(close(capacity_weighted_utilisation(&loads).unwrap(), 25.0 / 28.0));
    let signal = utilisation(&loads).unwrap();
    assert!(close(signal.per_type[0].ratio, 0.9));
    assert!(close(signal.per_type[1].ratio, 0.875));

    // Above the 0.7 target: scale out.
    let decision = TargetTracking::default().decide(signal.metric_math, 2, 0.0, &ScalingHistory::default()).unwrap();
    assert_eq!(decision.action, ScalingAction::ScaleOut);
    // ceil(2 × 0.8875 / 0.7) = ceil(2.5357…) = 3.
    assert_eq!(decision.desired, 3);
    assert_eq!(decision.reason, DecisionReason::AboveTarget);
}

#[test]
fn the_two_forms_differ_when_a_small_type_runs_hot() {
    // Ten p5 at 60 %, one g6 flat out.
    let loads = [TypeLoad::new("ml.p5.48xlarge", 10, 12.0, 20.0), TypeLoad::new("ml.g6.48xlarge", 1, 8.0, 8.0)];
    let metric_math = metric_math_utilisation(&loads).unwrap();
    let weighted = capacity_weighted_utilisation(&loads).unwrap();
    assert!(close(metric_math, 0.8)); // (0.6 + 1.0) / 2: above 0.7, would scale out
    assert!(close(weighted, 128.0 / 208.0)); // 0.615…: the fleet is below target
    let policy = TargetTracking::default();
    let history = ScalingHistory::default();
    assert_eq!(policy.decide(metric_math, 11, 0.0, &history).unwrap().action, ScalingAction::ScaleOut);
    // ceil(11 × 0.615 / 0.7) = 10.
    assert_eq!(policy.decide(weighted, 11, 0.0, &history).unwrap().desired, 10);
    // With weights n_t × m_t the metric-math form equals the capacity-weighted one.
    let weighted_by_capacity: Vec<TypeLoad> =
        loads.iter().map(|l| l.clone().with_weight(f64::from(l.instances) * l.max_concurrency)).collect();
    assert!(close(metric_math_utilisation(&weighted_by_capacity).unwrap(), weighted));
}

#[test]
fn weights_and_empty_types() {
    let loads = [
        TypeLoad::new("a", 1, 9.0, 10.0).with_weight(3.0),
        TypeLoad::new("b", 1, 1.0, 10.0).with_weight(1.0),
        TypeLoad::new("c", 0, 0.0, 10.0), // no instances: no datapoints, skipped
    ];
    assert!(close(metric_math_utilisation(&loads).unwrap(), (3.0 * 0.9 + 0.1) / 4.0));
    assert!(close(capacity_weighted_utilisation(&loads).unwrap(), 0.5));
    assert_eq!(utilisation(&loads).unwrap().per_type.len(), 2);
}

#[test]
fn bad_inputs_are_named() {
    let bad = |load: TypeLoad| utilisation(&[load]).unwrap_err();
    let error = bad(TypeLoad::new("ml.p5.48xlarge", 1, f64::NAN, 20.0));
    assert!(matches!(error, MetricsError::NotFinite { field: "ObservedConcurrency", .. }), "{error}");
    assert!(error.to_string().contains("ml.p5.48xlarge"), "{error}");
    let error = bad(TypeLoad::new("ml.p5.48xlarge", 1, -1.0, 20.0));
    assert_eq!(error.to_string(), "ObservedConcurrency of ml.p5.48xlarge is negative (-1)");
    let error = bad(TypeLoad::new("ml.g6.48xlarge", 1, 1.0, 0.0));
    assert_eq!(error.to_string(), "MaxConcurrency of ml.g6.48xlarge must be above 0, got 0");
    assert!(matches!(bad(TypeLoad::new("x", 1, 1.0, f64::INFINITY)), MetricsError::NotFinite { .. }));
    assert!(matches!(bad(TypeLoad::new("x", 1, 1.0, 2.0).with_weight(-1.0)), MetricsError::Negative { .. }));
    assert!(matches!(bad(TypeLoad::new("", 1, 1.0, 2.0)), MetricsError::EmptyName { .. }));
    assert_eq!(bad(TypeLoad::new("x", 0, 1.0, 2.0)), MetricsError::NoInstances);
    assert_eq!(utilisation(&[]).unwrap_err(), MetricsError::NoInstances);
    let twice = [TypeLoad::new("x", 1, 1.0, 2.0), TypeLoad::new("x", 2, 1.0, 2.0)];
    assert!(matches!(utilisation(&twice).unwrap_err(), MetricsError::DuplicateType { .. }));
    let zero_weights = [TypeLoad::new("x", 1, 1.0, 2.0).with_weight(0.0)];
    assert_eq!(metric_math_utilisation(&zero_weights).unwrap_err(), MetricsError::ZeroWeights);
}

// ---------------------------------------------------------------- target tracking

#[test]
fn dead_band_cooldowns_step_and_limits() {
    let policy = TargetTracking {
        min_instances: 2,
        max_instances: Some(10),
        max_scale_in_step: Some(1),
        ..TargetTracking::default()
    };
    let none = ScalingHistory::default();
    // Within 0.7 ± 0.05: hold.
    let hold = policy.decide(0.74, 4, 0.0, &none).unwrap();
    assert_eq!((hold.desired, hold.reason), (4, DecisionReason::WithinDeadBand));
    // 4 × 0.9 / 0.7 = 5.14 → 6.
    assert_eq!(policy.decide(0.9, 4, 0.0, &none).unwrap().desired, 6);
    // Far above: clamped to Max.
    let clamped = policy.decide(5.0, 4, 0.0, &none).unwrap();
    assert_eq!((clamped.desired, clamped.reason), (10, DecisionReason::ClampedToMax));
    // Scale-in: 4 × 0.2 / 0.7 = 1.14 → 2, but the step limit removes only 1.
    let scale_in = policy.decide(0.2, 4, 0.0, &none).unwrap();
    assert_eq!((scale_in.desired, scale_in.action), (3, ScalingAction::ScaleIn));
    // Slightly below target but rounding up keeps the count.
    assert_eq!(policy.decide(0.6, 4, 0.0, &none).unwrap().reason, DecisionReason::AtLoad);

    // Cooldowns: a scale-out at t=100 blocks scale-out and scale-in until t=400.
    let mut history = ScalingHistory::default();
    history.record(&policy.decide(0.9, 4, 100.0, &history).unwrap(), 100.0);
    let blocked = policy.decide(0.95, 6, 200.0, &history).unwrap();
    assert_eq!((blocked.desired, blocked.reason), (6, DecisionReason::ScaleOutCooldown { until: 400.0 }));
    let blocked = policy.decide(0.1, 6, 200.0, &history).unwrap();
    assert_eq!((blocked.desired, blocked.reason), (6, DecisionReason::ScaleInCooldown { until: 400.0 }));
    assert_eq!(policy.decide(0.95, 6, 400.0, &history).unwrap().action, ScalingAction::ScaleOut);
    // A scale-in at t=500 blocks scale-in for 1200, not scale-out.
    history.record(&policy.decide(0.1, 6, 500.0, &history).unwrap(), 500.0);
    assert_eq!(history.last_scale_in, Some(500.0));
    assert_eq!(
        policy.decide(0.1, 5, 600.0, &history).unwrap().reason,
        DecisionReason::ScaleInCooldown { until: 1700.0 }
    );
    assert_eq!(policy.decide(0.95, 5, 600.0, &history).unwrap().action, ScalingAction::ScaleOut);
    // Below Min is corrected even during a cooldown; no instances follow Min.
    assert_eq!(policy.decide(0.1, 1, 600.0, &history).unwrap().desired, 2);
    assert_eq!(policy.decide(0.0, 0, 0.0, &none).unwrap().reason, DecisionReason::ClampedToMin);
}

#[test]
fn bad_settings_are_rejected() {
    let none = ScalingHistory::default();
    let decide = |policy: TargetTracking| policy.decide(0.5, 2, 0.0, &none).unwrap_err();
    assert!(matches!(decide(TargetTracking { target: 0.0, ..Default::default() }), MetricsError::Setting { .. }));
    assert!(matches!(decide(TargetTracking { target: f64::NAN, ..Default::default() }), MetricsError::Setting { .. }));
    assert!(matches!(decide(TargetTracking { dead_band: -0.1, ..Default::default() }), MetricsError::Negative { .. }));
    assert_eq!(
        decide(TargetTracking { min_instances: 3, max_instances: Some(2), ..Default::default() }),
        MetricsError::MinAboveMax { min: 3, max: 2 }
    );
    let policy = TargetTracking::default();
    assert!(matches!(policy.decide(f64::NAN, 2, 0.0, &none), Err(MetricsError::NotFinite { .. })));
    assert!(matches!(policy.decide(-0.5, 2, 0.0, &none), Err(MetricsError::Negative { .. })));
    assert!(matches!(policy.decide(0.5, 2, f64::INFINITY, &none), Err(MetricsError::NotFinite { .. })));
}

#[test]
fn settings_from_the_problem() {
    let scenario = ScenarioBuilder::new(["a"]).pool("ml.g6.12xlarge", 1).instance_limits(1, Some(16)).build().unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let policy = TargetTracking::for_problem(&problem);
    assert_eq!((policy.min_instances, policy.max_instances), (1, Some(16)));
    assert_eq!(policy.scale_in_cooldown, 1200.0); // CooldownInMinutes default 20
    assert_eq!(policy.max_scale_in_step, Some(1));
    assert_eq!(policy.target, 0.7);
}

fn price(name: &str, accelerators: f64, hourly: f64) -> InstanceTypeSpec {
    InstanceTypeSpec {
        instance_type: name.into(),
        accelerator_count: accelerators as u32,
        accelerator_memory_gib: 24.0,
        v_cpu_count: 192.0,
        memory_in_mb: 786_432.0,
        hourly_price: Some(hourly),
    }
}

#[test]
fn launches_fall_back_by_priority_and_spread_over_azs() {
    let scenario = ScenarioBuilder::new(["a", "b", "c"])
        .pool("ml.p5.48xlarge", 1)
        .pool("ml.g6.48xlarge", 2)
        .capacity("ml.p5.48xlarge", "a", Some(0), 1)
        .capacity("ml.p5.48xlarge", "b", Some(1), 0)
        .capacity("ml.p5.48xlarge", "c", Some(0), 0)
        .instance_limits(0, Some(6))
        .component("llm", 1, 4, 8.0, 65_536)
        .fleet_instance("i-1", "ml.g6.48xlarge", "a", false)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let changes = instance_changes(&problem, 7);
    let order: Vec<(&str, &str, bool)> =
        changes.launches.iter().map(|l| (l.instance_type.as_str(), l.availability_zone.as_str(), l.reserved)).collect();
    assert_eq!(
        order,
        [
            // p5 first: b has no instance yet, a already has i-1.
            ("ml.p5.48xlarge", "b", false),
            ("ml.p5.48xlarge", "a", true), // the reservation slot
            // p5 exhausted: fall back to g6, fewest instances first (c has none).
            ("ml.g6.48xlarge", "c", false),
            ("ml.g6.48xlarge", "b", false),
            ("ml.g6.48xlarge", "c", false),
        ]
    );
    // MaxInstanceCount 6 with one running instance: 5 launches, 2 short.
    assert_eq!(changes.shortfall, 2);
    assert_eq!(changes.limited_by, Some(ChangeLimit::MaxInstanceCount(6)));
    let actions = changes.launch_actions();
    assert_eq!(
        actions[1],
        Action::LaunchInstance {
            instance_id: "new-2".into(),
            instance_type: "ml.p5.48xlarge".into(),
            availability_zone: "a".into(),
            reserved: true
        }
    );
    // The launches respect capacity: applying them yields no violations.
    let (_, violations) = FinalFleet::apply(&problem, &actions);
    assert!(violations.is_empty(), "{violations:?}");

    // Nothing can launch anywhere.
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.p5.48xlarge", 1)
        .capacity("ml.p5.48xlarge", "a", Some(0), 0)
        .component("llm", 1, 4, 8.0, 65_536)
        .build()
        .unwrap();
    let changes = instance_changes(&Problem::new(&scenario).unwrap(), 2);
    assert!(changes.launches.is_empty());
    assert_eq!((changes.shortfall, changes.limited_by), (2, Some(ChangeLimit::NoCapacity)));
}

#[test]
fn removals_take_fallback_then_expensive_then_crowded_az() {
    let scenario = ScenarioBuilder::new(["a", "b"])
        .instance_type(price("ml.p5.48xlarge", 8.0, 98.32))
        .instance_type(price("ml.g6e.48xlarge", 8.0, 30.13))
        .instance_type(price("ml.g6.48xlarge", 8.0, 13.35))
        .pool("ml.p5.48xlarge", 1)
        .pool("ml.g6e.48xlarge", 2)
        .pool("ml.g6.48xlarge", 2)
        .instance_limits(2, None)
        .component("llm", 2, 4, 8.0, 65_536)
        .fleet_instance("p5-a", "ml.p5.48xlarge", "a", false)
        .fleet_instance("p5-b", "ml.p5.48xlarge", "b", false)
        .fleet_instance("g6-a", "ml.g6.48xlarge", "a", false)
        .fleet_instance("g6e-b", "ml.g6e.48xlarge", "b", false)
        .fleet_instance("g6e-a", "ml.g6e.48xlarge", "a", true)
        .fleet_copies("llm", "p5-a", 1)
        .fleet_copies("llm", "p5-b", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let changes = instance_changes(&problem, -5);
    let order: Vec<&str> = changes.removals.iter().map(|r| r.instance_id.as_str()).collect();
    // Priority 2 first; among them the on-demand g6e (30.13) before the reserved g6e (costs 0)
    // and the g6 (13.35); then the two p5 are left, but MinInstanceCount 2 stops there.
    assert_eq!(order, ["g6e-b", "g6-a", "g6e-a"]);
    assert_eq!((changes.shortfall, changes.limited_by), (2, Some(ChangeLimit::MinInstanceCount(2))));
    assert!(changes.removals.iter().all(|r| r.copies == 0));

    // Ties on priority and price: remove from the AZ with the most instances.
    let scenario = ScenarioBuilder::new(["a", "b"])
        .instance_type(price("ml.g6.48xlarge", 8.0, 13.35))
        .pool("ml.g6.48xlarge", 1)
        .component("llm", 1, 4, 8.0, 65_536)
        .fleet_instance("i-1", "ml.g6.48xlarge", "a", false)
        .fleet_instance("i-2", "ml.g6.48xlarge", "b", false)
        .fleet_instance("i-3", "ml.g6.48xlarge", "b", false)
        .build()
        .unwrap();
    let changes = instance_changes(&Problem::new(&scenario).unwrap(), -2);
    let order: Vec<&str> = changes.removals.iter().map(|r| r.instance_id.as_str()).collect();
    assert_eq!(order, ["i-2", "i-1"]);
    assert_eq!(instance_changes(&Problem::new(&scenario).unwrap(), 0), InstanceChanges::default());
}

// ---------------------------------------------------------------- roll-ups

fn sample(id: &str, instance_type: &str, az: &str, latency_ms: f64, concurrency: f64) -> InstanceSample {
    InstanceSample {
        instance_id: id.into(),
        instance_type: instance_type.into(),
        availability_zone: az.into(),
        latency_ms,
        throughput: concurrency * 2.0,
        concurrency,
        accelerator_utilisation: concurrency * 5.0,
    }
}

#[test]
fn roll_ups_by_type_and_az() {
    let samples = vec![
        sample("i-2", "ml.p5.48xlarge", "b", 40.0, 18.0),
        sample("i-1", "ml.p5.48xlarge", "a", 20.0, 16.0),
        sample("i-1", "ml.p5.48xlarge", "a", 30.0, 20.0),
        sample("i-3", "ml.g6.48xlarge", "a", 90.0, 7.0),
        sample("i-3", "ml.g6.48xlarge", "a", 110.0, 8.0),
    ];
    let rollups = roll_up(&samples).unwrap();
    let keys: Vec<&str> = rollups.by_instance_type.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["ml.g6.48xlarge", "ml.p5.48xlarge"]); // sorted by key
    let p5 = &rollups.by_instance_type[1];
    assert_eq!((p5.samples, p5.instances), (3, 2));
    assert!(close(p5.latency_ms.mean, 30.0));
    // Nearest rank over [20, 30, 40]: p50 → rank ceil(1.5) = 2, p90 and p99 → rank 3.
    assert_eq!((p5.latency_ms.p50, p5.latency_ms.p90, p5.latency_ms.p99), (30.0, 40.0, 40.0));
    assert!(close(p5.concurrency.mean, 18.0));
    assert!(close(p5.throughput.mean, 36.0));
    let azs: Vec<(&str, u64, u64)> =
        rollups.by_availability_zone.iter().map(|g| (g.key.as_str(), g.samples, g.instances)).collect();
    assert_eq!(azs, [("a", 4, 2), ("b", 1, 1)]);
    let a = &rollups.by_availability_zone[0];
    // [20, 30, 90, 110]: p50 → rank 2 = 30, p90 → rank ceil(3.6) = 4 = 110.
    assert_eq!((a.latency_ms.p50, a.latency_ms.p90), (30.0, 110.0));
    assert!(close(a.accelerator_utilisation.mean, (16.0 + 20.0 + 7.0 + 8.0) * 5.0 / 4.0));

    // From roll-ups to the utilisation signal.
    let maxima: BTreeMap<String, f64> =
        [("ml.p5.48xlarge".to_string(), 20.0), ("ml.g6.48xlarge".to_string(), 8.0)].into();
    let loads = rollups.type_loads(&maxima);
    assert_eq!(loads.len(), 2);
    assert_eq!(loads[1], TypeLoad::new("ml.p5.48xlarge", 2, 18.0, 20.0));
    // (2 × 18 + 1 × 7.5) / (2 × 20 + 1 × 8)
    assert!(close(capacity_weighted_utilisation(&loads).unwrap(), 43.5 / 48.0));

    assert_eq!(roll_up(&[]).unwrap(), RollUps::default());
    let mut bad = sample("i-1", "t", "a", 1.0, 1.0);
    bad.latency_ms = f64::NAN;
    assert!(matches!(roll_up(&[bad]).unwrap_err(), MetricsError::NotFinite { field: "LatencyMs", .. }));
    let mut bad = sample("i-1", "t", "a", 1.0, 1.0);
    bad.throughput = -3.0;
    assert_eq!(roll_up(&[bad]).unwrap_err().to_string(), "Throughput of i-1 is negative (-3)");
    assert!(matches!(roll_up(&[sample("i-1", "t", "", 1.0, 1.0)]), Err(MetricsError::EmptyName { .. })));
    assert_eq!(percentile_nearest_rank(&[1.0], 0.0), Some(1.0));
    assert_eq!(percentile_nearest_rank(&[], 50.0), None);
    assert_eq!(percentile_nearest_rank(&[1.0], 101.0), None);
}

// ---------------------------------------------------------------- explain

/// A fleet where `llm` is three copies short for every reason at once.
fn partial_problem() -> Problem {
    let scenario = ScenarioBuilder::new(["us-east-1a", "us-east-1b"])
        .pool("ml.p5.48xlarge", 1)
        .pool("ml.g6.48xlarge", 2)
        .capacity("ml.p5.48xlarge", "us-east-1a", Some(0), 0)
        .capacity("ml.p5.48xlarge", "us-east-1b", Some(0), 0)
        .capacity("ml.g6.48xlarge", "us-east-1a", Some(0), 1)
        .instance_limits(0, Some(4))
        .component("llm", 6, 4, 8.0, 65_536)
        .max_imbalance("llm", 1)
        .component("emb", 5, 2, 1.0, 8_192)
        .fleet_instance("i-1", "ml.g6.48xlarge", "us-east-1a", false)
        .fleet_instance("i-2", "ml.g6.48xlarge", "us-east-1b", false)
        .fleet_instance("i-3", "ml.g5.xlarge", "us-east-1b", false)
        .fleet_copies("llm", "i-1", 1)
        .fleet_copies("emb", "i-1", 2)
        .fleet_copies("emb", "i-2", 3)
        .build()
        .unwrap();
    Problem::new(&scenario).unwrap()
}

fn partial_plan() -> Vec<Action> {
    let place = || Action::PlaceCopy { component: "llm".into(), instance_id: "new-1".into(), model_name: None };
    vec![
        Action::LaunchInstance {
            instance_id: "new-1".into(),
            instance_type: "ml.g6.48xlarge".into(),
            availability_zone: "us-east-1a".into(),
            reserved: true,
        },
        place(),
        place(),
    ]
}

#[test]
fn explanation_counts_add_up_for_a_hand_built_partial_case() {
    let problem = partial_problem();
    let (fleet, violations) = FinalFleet::apply(&problem, &partial_plan());
    assert!(violations.is_empty(), "{violations:?}");
    let why = explain(&problem, &fleet, "llm").unwrap();
    assert_eq!((why.copy_count, why.placed, why.missing), (6, 3, 3));
    assert_eq!(why.copies_per_az, [3, 0]);
    assert_eq!(why.balance_excess, 2);

    // One verdict per instance of the final fleet, one per (pool type, AZ).
    assert_eq!(why.instances.len(), fleet.instances.len());
    assert_eq!(why.launches.len(), 2 * 2);
    let verdicts: Vec<(&str, &InstanceVerdict)> =
        why.instances.iter().map(|i| (i.instance_id.as_str(), &i.verdict)).collect();
    let short = |free| InstanceVerdict::Short { resource: Resource::Accelerators, need: 4, free };
    assert_eq!(
        verdicts,
        [
            ("i-1", &short(0)),
            ("i-2", &short(2)),
            ("i-3", &InstanceVerdict::NotEligible { why: fleetplan::Ineligibility::NotInPool }),
            ("new-1", &short(0)),
        ]
    );
    let launches: Vec<(&str, &str, &LaunchVerdict)> =
        why.launches.iter().map(|l| (l.instance_type.as_str(), l.availability_zone.as_str(), &l.verdict)).collect();
    let none_left = LaunchVerdict::NoCapacity { available: 0, reserved: 0, launched: 0 };
    assert_eq!(
        launches,
        [
            ("ml.p5.48xlarge", "us-east-1a", &none_left),
            ("ml.p5.48xlarge", "us-east-1b", &none_left),
            ("ml.g6.48xlarge", "us-east-1a", &LaunchVerdict::NoCapacity { available: 0, reserved: 1, launched: 1 }),
            ("ml.g6.48xlarge", "us-east-1b", &LaunchVerdict::MaxInstanceCount { max: 4 }),
        ]
    );
    assert_eq!(
        why.reasons,
        [
            "0/4 instances have room, 0/4 launch options open",
            "ml.g6.48xlarge needs 4 accelerators per copy, at most 2 accelerators free (3 instances in us-east-1a, us-east-1b)",
            "ml.g5.xlarge is not in InstancePools (1 instance in us-east-1b)",
            "ml.p5.48xlarge has no capacity in us-east-1a, us-east-1b (Available 0)",
            "ml.g6.48xlarge has no capacity left in us-east-1a (Available 0, Reserved 1, 1 launched by the plan)",
            "MaxInstanceCount 4 reached (4 instances; blocks 1 launch option)",
            "placed copies 3/0 over us-east-1a/us-east-1b exceed MaxImbalance 1 by 2",
        ]
    );
    // Counts in the clauses add up to the totals of the headline.
    let instances_in_clauses: u64 = why.reasons[1..3].iter().map(|r| count_before(r, " instance")).sum();
    assert_eq!(instances_in_clauses, 4);

    // `unplaced` carries the same reasons; emb is complete and not listed.
    let list = unplaced(&problem, &fleet);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].inference_component_name, "llm");
    assert_eq!(list[0].copy_count, 3);
    assert_eq!(list[0].reasons, why.reasons);
    assert!(why.to_string().starts_with("3 copies of llm: 0/4 instances have room"));
    assert!(explain(&problem, &fleet, "nope").is_none());
    let emb = explain(&problem, &fleet, "emb").unwrap();
    assert_eq!(emb.missing, 0);
    assert!(emb.reasons.is_empty());
}

/// The number right before `marker` inside the parentheses of a clause.
fn count_before(clause: &str, marker: &str) -> u64 {
    let open = clause.rfind('(').unwrap();
    let inner = &clause[open + 1..];
    inner[..inner.find(marker).unwrap()].trim().parse().unwrap()
}

#[test]
fn explanation_reports_room_and_open_launches_and_too_large() {
    // Room left on an instance, a type too small for a copy, an open launch.
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.48xlarge", 1)
        .pool("ml.g5.xlarge", 2)
        .component("llm", 3, 2, 8.0, 65_536)
        .fleet_instance("i-1", "ml.g6.48xlarge", "a", false)
        .fleet_copies("llm", "i-1", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let (fleet, _) = FinalFleet::apply(&problem, &[]);
    let why = explain(&problem, &fleet, "llm").unwrap();
    assert_eq!(why.instances[0].verdict, InstanceVerdict::Room { copies: 3 });
    assert_eq!(
        why.reasons,
        [
            "1/1 instances have room, 1/2 launch options open",
            "ml.g6.48xlarge has room for 3 more copies (1 instance in a)",
            "ml.g6.48xlarge could still launch in a (unlimited)",
            "one copy needs 2 accelerators, more than a whole ml.g5.xlarge (1 accelerator) in a",
        ]
    );
}

// ---------------------------------------------------------------- report

#[test]
fn report_matches_a_hand_computed_case() {
    let scenario = ScenarioBuilder::new(["a", "b", "c"])
        .instance_type(price("ml.g6.12xlarge", 4.0, 4.6))
        .pool("ml.g6.12xlarge", 1)
        .component("web", 5, 1, 1.0, 1_024)
        .max_imbalance("web", 1)
        .component("solo", 1, 1, 1.0, 1_024)
        .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-2", "ml.g6.12xlarge", "a", false)
        .fleet_instance("i-3", "ml.g6.12xlarge", "b", true)
        .fleet_copies("web", "i-1", 3)
        .fleet_copies("web", "i-2", 1)
        .fleet_copies("web", "i-3", 1)
        .fleet_copies("solo", "i-3", 1)
        .build()
        .unwrap();
    let problem = Problem::new(&scenario).unwrap();
    let report = ReliabilityReport::build(&problem);
    let web = &report.components[0];
    assert_eq!(web.copies_per_az, [4, 1, 0]);
    assert_eq!((web.placed, web.copy_count, web.instances), (5, 5, 3));
    assert_eq!((web.imbalance, web.max_imbalance, web.balance_excess), (4, Some(1), 3));
    // Losing AZ a leaves 1 of 5; losing i-1 leaves 2.
    assert_eq!((web.copies_left_after_az_loss, web.worst_az.as_deref()), (1, Some("a")));
    assert_eq!((web.copies_left_after_instance_loss, web.worst_instance.as_deref()), (2, Some("i-1")));
    assert_eq!(web.warnings, [ReliabilityWarning::ImbalanceExceeded]);
    let solo = &report.components[1];
    assert_eq!(solo.copies_per_az, [0, 1, 0]);
    assert_eq!((solo.copies_left_after_az_loss, solo.copies_left_after_instance_loss), (0, 0));
    assert_eq!(solo.warnings, [ReliabilityWarning::SingleAz, ReliabilityWarning::SingleCopy]);
    assert_eq!(solo.max_imbalance, None);

    assert_eq!(report.instance_count, 3);
    assert_eq!(report.instances_per_az, [2, 1, 0]);
    assert_eq!(report.instances_by_priority, BTreeMap::from([(1, 3)]));
    assert_eq!(report.instance_types.len(), 1);
    assert_eq!(report.instance_types[0].instances_per_az, [2, 1, 0]);
    assert_eq!(report.instance_types[0].reserved, 1);
    // Two on-demand instances at 4.60; the reserved one costs nothing.
    assert!(close(report.cost_per_hour, 9.2));
    assert!(!report.cost_in_instance_units);

    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["Components"][0]["CopiesPerAz"], serde_json::json!([4, 1, 0]));
    assert_eq!(json["Components"][1]["Warnings"], serde_json::json!(["SingleAz", "SingleCopy"]));
    assert_eq!(json["CostPerHour"], serde_json::json!(9.2));
    let table = report.to_table();
    assert!(table.contains("$9.20/h"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("web ") && l.contains("5/5") && l.ends_with("imbalance>max")),
        "{table}"
    );
}

#[test]
fn report_after_a_plan_and_svg_escaping() {
    let problem = partial_problem();
    let plan_actions = partial_plan();
    let (fleet, _) = FinalFleet::apply(&problem, &plan_actions);
    let report = ReliabilityReport::for_fleet(&problem, &fleet);
    assert_eq!(report.components[0].copies_per_az, [3, 0]);
    assert_eq!(report.instance_count, 4);
    // ml.g5.xlarge has no price in the catalogue: costs count instances (3 on-demand).
    assert!(report.cost_in_instance_units);
    assert!(close(report.cost_per_hour, 3.0));
    assert!(report.components[0].warnings.contains(&ReliabilityWarning::Unplaced));

    let scenario = ScenarioBuilder::new(["a<&>\"'"])
        .pool("ml.g6.12xlarge", 1)
        .component("x<y>&z", 0, 1, 1.0, 1_024)
        .build()
        .unwrap();
    let svg = ReliabilityReport::build(&Problem::new(&scenario).unwrap()).to_svg();
    assert!(svg.contains("x&lt;y&gt;&amp;z"));
    assert!(svg.contains("a&lt;&amp;&gt;&quot;&apos;"));
    assert!(!svg.contains("x<y>"));
}

// ---------------------------------------------------------------- properties

fn type_loads() -> impl Strategy<Value = Vec<TypeLoad>> {
    prop::collection::vec((0u32..50, 0.1f64..100.0, 0.0f64..=1.0, prop::option::of(0.01f64..10.0)), 1..6).prop_map(
        |entries| {
            entries
                .into_iter()
                .enumerate()
                .map(|(index, (instances, max, fraction, weight))| TypeLoad {
                    instance_type: format!("type-{index}"),
                    // At least one type has instances.
                    instances: if index == 0 { instances.max(1) } else { instances },
                    observed_concurrency: fraction * max,
                    max_concurrency: max,
                    weight,
                })
                .collect()
        },
    )
}

proptest! {
    #[test]
    fn utilisation_is_within_zero_and_one_when_observations_stay_below_maxima(loads in type_loads()) {
        let signal = utilisation(&loads).unwrap();
        for value in [signal.metric_math, signal.capacity_weighted] {
            prop_assert!((0.0..=1.0 + 1e-12).contains(&value), "{value}");
        }
    }

    #[test]
    fn utilisation_is_monotone_in_load(loads in type_loads(), which in 0usize..6, extra in 0.0f64..50.0) {
        let before = utilisation(&loads).unwrap();
        let mut more = loads.clone();
        let index = which % more.len();
        more[index].observed_concurrency += extra;
        let after = utilisation(&more).unwrap();
        prop_assert!(after.metric_math >= before.metric_math);
        prop_assert!(after.capacity_weighted >= before.capacity_weighted);
    }

    #[test]
    fn target_tracking_never_leaves_min_max(
        utilisation in 0.0f64..20.0,
        current in 0u32..500,
        min in 0u32..50,
        span in prop::option::of(0u32..100),
        target in 0.1f64..=1.0,
        band in 0.0f64..0.09,
        step in prop::option::of(1u32..10),
        now in 0.0f64..5000.0,
        last_out in prop::option::of(0.0f64..5000.0),
        last_in in prop::option::of(0.0f64..5000.0),
    ) {
        let policy = TargetTracking {
            target,
            dead_band: band,
            min_instances: min,
            max_instances: span.map(|s| min + s),
            max_scale_in_step: step,
            ..TargetTracking::default()
        };
        let history = ScalingHistory { last_scale_out: last_out, last_scale_in: last_in };
        let decision = policy.decide(utilisation, current, now, &history).unwrap();
        prop_assert!(decision.desired >= min);
        if let Some(max) = policy.max_instances {
            prop_assert!(decision.desired <= max);
        }
        // Scaling direction follows the signal unless the limits force it.
        if decision.action == ScalingAction::ScaleOut && current >= min {
            prop_assert!(utilisation > target);
        }
        if decision.action == ScalingAction::ScaleIn && policy.max_instances.is_none_or(|max| current <= max) {
            prop_assert!(utilisation < target);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// On random problems, after random launches: one verdict per instance and per (pool type,
    /// AZ); `Room` and `Short` agree with actually placing one more copy; `Unplaced` counts add
    /// up; the report's numbers are consistent with the fleet and the shared objective.
    #[test]
    fn explanations_and_reports_are_consistent(problem in common::problem(common::Config::MEDIUM), launches in 0i64..6) {
        let actions = instance_changes(&problem, launches).launch_actions();
        let (fleet, violations) = FinalFleet::apply(&problem, &actions);
        prop_assert!(violations.is_empty(), "{:?}", violations);
        let pool_slots = problem.pool_types().count() * problem.azs().len();
        let per_az = fleet.copies_per_az(&problem);
        let mut missing_total = 0;
        for (index, component) in problem.components().iter().enumerate() {
            let why = explain(&problem, &fleet, &component.name).unwrap();
            prop_assert_eq!(why.instances.len(), fleet.instances.len());
            prop_assert_eq!(why.launches.len(), pool_slots);
            let placed: u64 = per_az[index].iter().sum();
            prop_assert_eq!(why.missing, u64::from(component.copy_count).saturating_sub(placed));
            missing_total += why.missing;
            prop_assert_eq!(why.reasons.is_empty(), why.missing == 0);
            if why.missing > 0 {
                let headline = format!(
                    "{}/{} instances have room, {}/{} launch options open",
                    why.instances_with_room(), fleet.instances.len(), why.open_launches(), pool_slots
                );
                prop_assert_eq!(&why.reasons[0], &headline);
            }
            for (position, verdict) in why.instances.iter().enumerate() {
                let fits_one_more = {
                    let mut more = actions.clone();
                    more.push(Action::PlaceCopy {
                        component: component.name.clone(),
                        instance_id: verdict.instance_id.clone(),
                        model_name: None,
                    });
                    let (after, _) = FinalFleet::apply(&problem, &more);
                    let instance = &after.instances[position];
                    instance.used(&problem).fits_in(&problem.instance_types()[instance.type_index].capacity)
                };
                match verdict.verdict {
                    InstanceVerdict::Room { copies } => prop_assert!(copies >= 1 && fits_one_more),
                    InstanceVerdict::Short { need, free, .. } => prop_assert!(need > free && !fits_one_more),
                    InstanceVerdict::NotEligible { .. } => {}
                }
            }
        }
        let listed: u64 = unplaced(&problem, &fleet).iter().map(|u| u.copy_count).sum();
        prop_assert_eq!(listed, missing_total);

        let report = ReliabilityReport::for_fleet(&problem, &fleet);
        prop_assert_eq!(report.instance_count, fleet.instances.len() as u64);
        prop_assert_eq!(report.instances_per_az.iter().sum::<u64>(), report.instance_count);
        prop_assert_eq!(report.instance_types.iter().map(|t| t.instances).sum::<u64>(), report.instance_count);
        prop_assert_eq!(report.cost_per_hour, fleetplan::objective(&problem, &fleet).cost());
        for (component, counts) in report.components.iter().zip(&per_az) {
            prop_assert_eq!(&component.copies_per_az, counts);
            // An instance sits in one AZ, so losing an AZ never leaves more than losing an instance.
            prop_assert!(component.copies_left_after_az_loss <= component.copies_left_after_instance_loss);
            prop_assert!(component.copies_left_after_instance_loss <= component.placed);
        }
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        prop_assert_eq!(json["Components"].as_array().map(Vec::len), Some(problem.components().len()));
    }
}

/// Issue 18, defect 1 class: launch actions never take an id an instance of the fleet carries.
#[test]
fn launch_actions_skip_ids_the_fleet_uses() {
    let scenario = ScenarioBuilder::new(["a"])
        .pool("ml.g6.12xlarge", 1)
        .component("llm", 1, 4, 0.0, 1024)
        .fleet_instance("new-1", "ml.g6.12xlarge", "a", false)
        .fleet_instance("new-3", "ml.g6.12xlarge", "a", false)
        .build()
        .expect("valid scenario");
    let problem = Problem::new(&scenario).unwrap();
    let actions = instance_changes(&problem, 2).launch_actions();
    let ids: Vec<&str> = actions
        .iter()
        .filter_map(|action| match action {
            Action::LaunchInstance { instance_id, .. } => Some(instance_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["new-2", "new-4"]);
    let (_, violations) = FinalFleet::apply(&problem, &actions);
    assert!(violations.is_empty(), "{violations:?}");
}
