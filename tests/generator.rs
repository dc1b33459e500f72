//! The shared scenario generator (`common/generator.rs`): every scenario it makes validates, a
//! seed gives the same scenario every time, each knob does what it says, and the presets cover
//! the features the property tests rely on.
use crate::common;
use crate::common::generator::{generate, generate_stream, Config, Shapes};

use fleetplan::{FinalFleet, Problem, Scenario};
use proptest::prelude::*;

/// Every preset, by name.
const PRESETS: [(&str, Config); 8] = [
    ("TINY", Config::TINY),
    ("SMALL", Config::SMALL),
    ("MEDIUM", Config::MEDIUM),
    ("CATALOGUE", Config::CATALOGUE),
    ("CONSOLIDATION", Config::CONSOLIDATION),
    ("SWEEP", Config::SWEEP),
    ("FALLBACK_FLEET", Config::FALLBACK_FLEET),
    ("HARD", Config::HARD),
];

fn strategies(scenario: &Scenario) -> Vec<Option<&str>> {
    scenario
        .inference_components
        .iter()
        .flat_map(|component| component.specification.iter().chain(component.specifications.iter().flatten()))
        .map(|spec| {
            spec.scheduling_config
                .as_ref()
                .and_then(|config| config.placement_strategy.map(|strategy| strategy.as_str()))
        })
        .collect()
}

#[test]
fn every_preset_makes_only_valid_scenarios() {
    for (name, config) in PRESETS {
        for seed in 0..300 {
            let scenario = generate(seed, &config);
            if let Err(error) = Problem::new(&scenario) {
                panic!("{name} seed {seed}: {error}\n{scenario:?}");
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_scenario() {
    for (name, config) in PRESETS {
        for seed in [0, 1, 42, u64::MAX] {
            assert_eq!(generate(seed, &config), generate(seed, &config), "{name} seed {seed}");
        }
        // Different seeds and streams differ (a generator ignoring its seed would not).
        let distinct: std::collections::BTreeSet<String> =
            (0..20).map(|seed| format!("{:?}", generate(seed, &config))).collect();
        assert!(distinct.len() >= 15, "{name}: {} distinct of 20", distinct.len());
        assert_ne!(generate_stream(7, 0, &config), generate_stream(7, 1, &config), "{name}");
    }
}

#[test]
fn size_knobs_bound_what_they_count() {
    let config = Config { azs: (2, 3), pool_types: (2, 2), components: (4, 6), fleet: (3, 5), ..Config::MEDIUM };
    let (mut az_counts, mut component_counts) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for seed in 0..200 {
        let scenario = generate(seed, &config);
        let azs = scenario.availability_zones.len();
        let components = scenario.inference_components.len();
        assert!((2..=3).contains(&azs), "seed {seed}: {azs} AZs");
        assert_eq!(scenario.endpoint.instance_pools.len(), 2, "seed {seed}");
        assert!((4..=6).contains(&components), "seed {seed}: {components} components");
        let fleet = scenario.fleet.instances.len();
        assert!(fleet == 0 || (3..=5).contains(&fleet), "seed {seed}: {fleet} instances");
        az_counts.insert(azs);
        component_counts.insert(components);
    }
    // Both ends of each range are reached.
    assert_eq!(az_counts, [2, 3].into());
    assert_eq!(component_counts, [4, 5, 6].into());
    // `sized` fixes the counts.
    let scenario = generate(3, &Config::SMALL.sized(2, 3, 0));
    assert_eq!((scenario.availability_zones.len(), scenario.inference_components.len()), (2, 3));
    assert!(scenario.fleet.instances.is_empty());
}

#[test]
fn copy_knobs_bound_copy_counts() {
    for seed in 0..200 {
        let tiny = generate(seed, &Config::TINY);
        let total: u32 = tiny.inference_components.iter().map(|c| c.runtime_config.copy_count).sum();
        assert!(total <= 5, "seed {seed}: {total} copies");
        // Consolidation: every CopyCount is what runs now.
        let fleet = generate(seed, &Config::CONSOLIDATION);
        for component in &fleet.inference_components {
            let running: u32 = fleet
                .fleet
                .copies
                .iter()
                .filter(|copy| copy.inference_component_name == component.inference_component_name)
                .map(|copy| copy.copy_count)
                .sum();
            assert_eq!(component.runtime_config.copy_count, running, "seed {seed}");
        }
        let policy = fleet.endpoint.managed_instance_scaling.and_then(|scaling| scaling.scale_in_policy);
        let step = policy.and_then(|policy| policy.maximum_step_size).unwrap_or_default();
        assert!((1..=3).contains(&step), "seed {seed}: step {step}");
    }
}

#[test]
fn share_knobs_switch_features_on_and_off() {
    let none = Config { spread_percent: 0, draining_percent: 0, events: 0, capacity_percent: 0, ..Config::MEDIUM };
    let all =
        Config { spread_percent: 100, draining_percent: 100, events: 8, empty_fleet_percent: 0, ..Config::MEDIUM };
    for seed in 0..100 {
        let off = generate(seed, &none);
        assert!(strategies(&off).iter().all(|s| *s == Some("BINPACK")), "seed {seed}");
        assert!(off.fleet.instances.iter().all(|i| i.state.is_none()), "seed {seed}");
        assert!(off.capacity.is_empty() && off.capacity_events.is_empty() && off.now.is_none(), "seed {seed}");
        let on = generate(seed, &all);
        assert!(strategies(&on).iter().all(|s| *s == Some("SPREAD")), "seed {seed}");
        assert!(
            on.fleet.instances.iter().all(|i| i.state.is_some_and(|state| state.as_str() == "Draining")),
            "seed {seed}"
        );
        assert!(on.now.is_some(), "seed {seed}");
        assert!(on.capacity_events.len() <= 8);
    }
}

/// Counts scenarios of `config` (seeds 0..n) that have each feature.
fn coverage(config: &Config, n: u64) -> std::collections::BTreeMap<&'static str, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for seed in 0..n {
        let scenario = generate(seed, config);
        let problem = Problem::new(&scenario).expect("valid");
        let strategies = strategies(&scenario);
        let pool: Vec<&str> = scenario.endpoint.instance_pools.iter().map(|p| p.instance_type.as_str()).collect();
        let running = FinalFleet::apply(&problem, &[]).0;
        let features = [
            ("SPREAD", strategies.contains(&Some("SPREAD"))),
            ("BINPACK", strategies.contains(&Some("BINPACK"))),
            (
                "MaxImbalance",
                scenario.inference_components.iter().any(|c| {
                    c.specification.iter().chain(c.specifications.iter().flatten()).any(|s| {
                        s.scheduling_config.as_ref().is_some_and(|config| config.availability_zone_balance.is_some())
                    })
                }),
            ),
            ("per-type specifications", scenario.inference_components.iter().any(|c| c.specifications.is_some())),
            ("capacity block", scenario.capacity.iter().any(|c| c.available == Some(0))),
            ("capacity limit", scenario.capacity.iter().any(|c| c.available.is_some_and(|a| a > 0))),
            ("reservation", scenario.capacity.iter().any(|c| c.reserved > 0)),
            // Catalogue types without a price need no InstanceTypes entry.
            (
                "unpriced type",
                pool.iter().any(|name| {
                    !scenario.instance_types.iter().any(|t| t.instance_type == *name && t.hourly_price.is_some())
                }),
            ),
            ("fleet copies", !scenario.fleet.copies.is_empty()),
            ("idle instance", running.instances.iter().any(|i| i.copies.is_empty())),
            ("reserved instance", scenario.fleet.instances.iter().any(|i| i.reserved)),
            ("outsider", scenario.fleet.instances.iter().any(|i| !pool.contains(&i.instance_type.as_str()))),
            ("draining", scenario.fleet.instances.iter().any(|i| i.state.is_some())),
            ("copies above desired", {
                let existing = problem.existing_copies_per_component();
                problem.components().iter().zip(&existing).any(|(c, &e)| e > u64::from(c.copy_count))
            }),
            ("MinInstanceCount", problem.scaling().min_instances > 0),
            ("MaxInstanceCount", problem.scaling().max_instances.is_some()),
            ("events", !scenario.capacity_events.is_empty()),
            ("single model", scenario.endpoint.model_name.is_some()),
        ];
        for (feature, present) in features {
            *seen.entry(feature).or_insert(0) += usize::from(present);
        }
    }
    seen
}

#[test]
fn the_presets_cover_the_features_their_tests_rely_on() {
    let wanted: [(&str, Config, &[&str]); 5] = [
        (
            "MEDIUM",
            Config::MEDIUM,
            &[
                "SPREAD",
                "BINPACK",
                "MaxImbalance",
                "per-type specifications",
                "capacity block",
                "capacity limit",
                "reservation",
                "unpriced type",
                "fleet copies",
                "idle instance",
                "reserved instance",
                "copies above desired",
                "MinInstanceCount",
                "MaxInstanceCount",
            ],
        ),
        ("TINY", Config::TINY, &["SPREAD", "BINPACK", "capacity block", "fleet copies", "MinInstanceCount"]),
        ("CATALOGUE", Config::CATALOGUE, &["outsider", "reserved instance", "copies above desired", "capacity block"]),
        ("CONSOLIDATION", Config::CONSOLIDATION, &["outsider", "idle instance", "fleet copies", "SPREAD", "BINPACK"]),
        ("SWEEP", Config::SWEEP, &["single model", "outsider", "per-type specifications", "unpriced type"]),
    ];
    for (name, config, features) in wanted {
        let seen = coverage(&config, 300);
        for feature in features {
            // At least one scenario in twenty has it.
            assert!(seen[feature] >= 15, "{name}: {feature} in {} of 300", seen[feature]);
        }
    }
    let with_events = coverage(&Config { events: 8, draining_percent: 50, ..Config::SMALL }, 200);
    assert!(with_events["events"] >= 100 && with_events["draining"] >= 50, "{with_events:?}");
}

/// `HARD` has the third held-out set's character: 2–4 AZs, 40–60 components, copies of 4 or 8
/// accelerators on most endpoints, a MaxInstanceCount that the greedy plan runs into on most,
/// and draining instances or capacity events on about half.
#[test]
fn the_hard_preset_has_large_copies_a_binding_max_events_and_draining() {
    let seeds = 40u64;
    let (mut large, mut binding, mut eventful) = (0, 0, 0);
    for seed in 0..seeds {
        let scenario = generate_stream(seed, seed, &Config::HARD);
        let problem = Problem::new(&scenario).expect("valid");
        assert!((2..=4).contains(&scenario.availability_zones.len()), "seed {seed}");
        assert!((40..=60).contains(&scenario.inference_components.len()), "seed {seed}");
        let accelerators = scenario
            .inference_components
            .iter()
            .flat_map(|c| c.specification.iter().chain(c.specifications.iter().flatten()))
            .filter_map(|s| s.compute_resource_requirements.number_of_accelerator_devices_required);
        large += usize::from(accelerators.filter(|&a| a >= 4).count() >= 5);
        let draining = scenario.fleet.instances.iter().any(|i| i.state.is_some());
        eventful += usize::from(draining || !scenario.capacity_events.is_empty());
        let plan = fleetplan::plan_greedy(&problem);
        assert!(fleetplan::verify(&problem, &plan).is_empty(), "seed {seed}");
        let final_size = FinalFleet::apply(&problem, &plan.actions).0.instances.len() as u64;
        let at_max = problem.scaling().max_instances.is_some_and(|max| final_size >= u64::from(max));
        binding += usize::from(at_max && !plan.unplaced.is_empty());
    }
    let share = |n: usize| n * 100 / seeds as usize;
    assert!(share(large) >= 50, "large copies on {large} of {seeds}");
    assert!(share(binding) >= 40, "Max binds on {binding} of {seeds}");
    assert!((30..=70).contains(&share(eventful)), "events or draining on {eventful} of {seeds}");
}

#[test]
fn shapes_pick_the_type_family() {
    for seed in 0..50 {
        let test = generate(seed, &Config::SMALL);
        assert!(test.endpoint.instance_pools.iter().all(|p| p.instance_type.starts_with("ml.test")));
        let tiny = generate(seed, &Config::TINY);
        assert!(tiny.instance_types.iter().all(|t| t.accelerator_count <= 4 && t.memory_in_mb <= 8_192.0));
        assert_eq!(Config::TINY.shapes, Shapes::Tiny);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn generated_problems_validate_and_keep_their_fleet(problem in common::problem(common::Config::MEDIUM)) {
        prop_assert!(!problem.components().is_empty());
        prop_assert!(!problem.azs().is_empty());
        // The fleet never starts broken: every existing instance's copies fit.
        let fleet = FinalFleet::apply(&problem, &[]).0;
        for instance in &fleet.instances {
            let capacity = problem.instance_types()[instance.type_index].capacity;
            prop_assert!(instance.used(&problem).fits_in(&capacity));
        }
    }

    #[test]
    fn reversing_the_input_keeps_it_valid(scenario in common::scenario(common::Config::SMALL)) {
        prop_assert!(Problem::new(&scenario).is_ok());
        prop_assert!(Problem::new(&common::reversed(&scenario)).is_ok());
    }
}
