//! Bin-packing literature instances with known optima (issue 11), converted by
//! `benches/support/bpp.rs`: the smallest stored ones run here (seconds); `bpp_run` runs all.
//! Whatever the time limit cuts short, the exact planner must not claim `Optimal` with another
//! instance count than the published optimum, and its bound must not exceed that optimum.

use std::path::Path;
use std::time::Duration;

use fleetplan::{verify, ExactPlanner, Objective, Plan, Problem, Status};

#[path = "../benches/support/bpp.rs"]
mod bpp;

fn instance_count(objective: &Objective) -> u32 {
    objective.instances_by_priority.values().sum()
}

fn problem(instance: &bpp::BppInstance) -> Problem {
    let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
    Problem::new(&scenario).unwrap_or_else(|e| panic!("{}: {e}", instance.name))
}

/// The checks every run must pass, proven or not.
fn assert_sound(name: &str, problem: &Problem, plan: &Plan, items: u64, optimum: u32) {
    assert!(verify(problem, plan).is_empty(), "{name}: {:?}", verify(problem, plan));
    assert_eq!(plan.objective.placed_copies, items, "{name}: every item fits an empty bin");
    let count = instance_count(&plan.objective);
    assert!(count >= optimum, "{name}: {count} bins beat the proven optimum {optimum}");
    if plan.status == Status::Optimal {
        assert_eq!(count, optimum, "{name}: claimed Optimal with {count} bins, the optimum is {optimum}");
    }
    // A proven plan is its own bound; any other plan carries one, with an instance count.
    if plan.status != Status::Optimal {
        let bound = plan.bound.as_ref().unwrap_or_else(|| panic!("{name}: unproven plan without a bound"));
        assert!(!bound.instances_by_priority.is_empty(), "{name}: bound without an instance count: {bound:?}");
        let bound_count = instance_count(bound);
        assert!(bound_count <= optimum, "{name}: bound {bound_count} bins above the optimum {optimum}");
    }
}

#[test]
fn smallest_stored_instances_are_planned_soundly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let optima = bpp::known_optima(root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(optima.len(), 50, "10 of each of u120, u250, t60, t120; 5 of each of Scholl N1C1W1, N1W1B1");
    let families: std::collections::BTreeSet<&str> = optima.iter().map(|known| bpp::family(&known.name)).collect();
    assert_eq!(families.into_iter().collect::<Vec<_>>(), ["N1C1W1", "N1W1B1", "t120", "t60", "u120", "u250"]);
    let planner = ExactPlanner::new().time_limit(Duration::from_secs(1));
    for name in ["Scholl_N1C1W1_C", "Falkenauer_t60_00", "Falkenauer_u120_00"] {
        let known = optima.iter().find(|known| known.name == name).unwrap_or_else(|| panic!("{name} in optima.tsv"));
        let instance = bpp::BppInstance::read(&known.path).unwrap_or_else(|e| panic!("{e}"));
        let problem = problem(&instance);
        let plan = planner.plan(&problem);
        assert_sound(name, &problem, &plan, instance.sizes.len() as u64, known.optimum);
    }
}

#[test]
fn tiny_instance_is_proven_at_its_optimum() {
    // 6+4, 6+4, 5+5: three full bins, and Σ = 30 = 3 × 10 proves nothing fewer fits.
    let instance = bpp::BppInstance::parse("tiny", "6\n10\n6\n4\n6\n4\n5\n5\n").unwrap_or_else(|e| panic!("{e}"));
    let problem = problem(&instance);
    let plan = ExactPlanner::new().time_limit(Duration::from_secs(5)).plan(&problem);
    assert_eq!(plan.status, Status::Optimal, "{:?}", plan.stop_reason);
    assert_sound("tiny", &problem, &plan, 6, 3);
    assert_eq!(instance.trivial_bound(), 3);
}

#[test]
fn converter_maps_sizes_to_components_and_capacity_to_memory() {
    let instance = bpp::BppInstance::parse("three", "3 100 30 70 30").unwrap_or_else(|e| panic!("{e}"));
    let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.availability_zones, ["az-1"]);
    assert_eq!(scenario.instance_types.len(), 1);
    assert_eq!(scenario.instance_types[0].memory_in_mb, 12_800.0);
    assert_eq!(scenario.instance_types[0].accelerator_count, 0.0);
    let components: Vec<(String, f64, f64)> = scenario
        .inference_components
        .iter()
        .map(|c| {
            let spec = c.specification.as_ref().map(|s| s.compute_resource_requirements.min_memory_required_in_mb);
            (c.inference_component_name.clone(), c.runtime_config.copy_count, spec.unwrap_or(f64::NAN))
        })
        .collect();
    assert_eq!(components, [("size-00030".to_string(), 2.0, 3840.0), ("size-00070".to_string(), 1.0, 8960.0)]);
    assert!(scenario.fleet.instances.is_empty());
}

#[test]
fn converter_rejects_malformed_instances() {
    assert_eq!(bpp::BppInstance::parse("short", "3 100 30 70"), Err("short: header says 3 items, file has 2".into()));
    assert_eq!(bpp::BppInstance::parse("big", "1 100 101"), Err("big: item size 101 outside 1..=100".into()));
    assert_eq!(bpp::BppInstance::parse("empty", ""), Err("empty: expected item count and capacity".into()));
    let Err(message) = bpp::BppInstance::parse("float", "1 100 4.5") else { panic!("4.5 parsed as a size") };
    assert!(message.starts_with("float: \"4.5\" is not a size"), "{message}");
}

#[test]
fn literature_instances_needing_the_pattern_lp_are_proven() {
    // Deterministic (node limit, no clock). `N1W1B1R0`: the Martello–Toth bound (17) is below the
    // optimum (18), only the pattern-LP cut proves it. `t60_00`: a triplet instance, where first
    // fit needs 23 bins and only the column-generation dive packs the optimal 20.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let optima = bpp::known_optima(root).unwrap_or_else(|e| panic!("{e}"));
    let planner = ExactPlanner::new().node_limit(200_000);
    for name in ["Scholl_N1W1B1R0", "Falkenauer_t60_00"] {
        let known = optima.iter().find(|known| known.name == name).unwrap_or_else(|| panic!("{name} in optima.tsv"));
        let instance = bpp::BppInstance::read(&known.path).unwrap_or_else(|e| panic!("{e}"));
        let problem = problem(&instance);
        let plan = planner.plan(&problem);
        assert_sound(name, &problem, &plan, instance.sizes.len() as u64, known.optimum);
        assert_eq!(plan.status, Status::Optimal, "{name}: {:?} {:?}", plan.stop_reason, plan.bound);
    }
}
