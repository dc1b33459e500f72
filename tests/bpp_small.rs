//! Bin-packing literature instances with known optima (issue 11), converted by
//! `benches/support/bpp.rs` (one resource) and `benches/support/vbp.rs` (vector packing, 2–3
//! resources): the smallest stored ones run here (seconds); `bpp_run` / `vbp_run` run all.
//! Whatever the time limit cuts short, the exact planner must not claim `Optimal` with another
//! instance count than the published optimum, and its bound must not exceed that optimum.

use std::path::Path;
use std::time::Duration;

use fleetplan::{verify, ExactPlanner, Objective, Plan, Problem, Status};

#[path = "../benches/support/bpp.rs"]
pub(crate) mod bpp;

#[path = "../benches/support/vbp.rs"]
mod vbp;

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
    assert_eq!(scenario.instance_types[0].accelerator_count, 0);
    let components: Vec<(String, u32, f64)> = scenario
        .inference_components
        .iter()
        .map(|c| {
            let spec = c.specification.as_ref().map(|s| s.compute_resource_requirements.min_memory_required_in_mb);
            (c.inference_component_name.clone(), c.runtime_config.copy_count, spec.unwrap_or(f64::NAN))
        })
        .collect();
    assert_eq!(components, [("size-00030".to_string(), 2, 3840.0), ("size-00070".to_string(), 1, 8960.0)]);
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

fn vector_problem(instance: &vbp::VbpInstance) -> Problem {
    let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
    Problem::new(&scenario).unwrap_or_else(|e| panic!("{}: {e}", instance.name))
}

fn stored_vector_run(name: &str) -> (vbp::KnownValue, vbp::VbpInstance) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = vbp::known_values(root).unwrap_or_else(|e| panic!("{e}"));
    let run = known.into_iter().find(|run| run.name == name).unwrap_or_else(|| panic!("{name} in values.tsv"));
    let instance = run.instance().unwrap_or_else(|e| panic!("{e}"));
    (run, instance)
}

#[test]
fn vector_packing_table_lists_every_family_with_proven_optima() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = vbp::known_values(root).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(known.len(), 47, "27 Panigrahy, 10 triplet files in 3-D, the same 10 in 2-D");
    let families: std::collections::BTreeSet<String> = known.iter().map(|run| vbp::family(&run.name)).collect();
    let expected = ["P1-3d", "P2-3d", "P3-3d", "P6-3d", "P7-3d", "P8-3d", "P9-3d", "TC-2d", "TC-3d", "TF-2d", "TF-3d"];
    assert_eq!(families.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    for run in &known {
        assert_eq!(run.kind, vbp::ValueKind::Optimum, "{}", run.name);
        let instance = run.instance().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(instance.capacities.len(), run.dimensions, "{}", run.name);
        // Every stored file converts into a valid scenario.
        let _ = vector_problem(&instance);
        assert!(instance.trivial_bound() <= u64::from(run.value), "{}: trivial bound above the optimum", run.name);
    }
}

#[test]
fn triplet_files_carry_their_own_optimality_proof() {
    // In file order, the items form n/3 triples filling every resource exactly (a packing in n/3
    // bins), and Σ sizes = capacity × n/3 in every resource (no packing in fewer): the stored value
    // n/3 is the optimum, in 3-D and in any projection (the `@2d` runs).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = vbp::known_values(root).unwrap_or_else(|e| panic!("{e}"));
    let triplets: Vec<&vbp::KnownValue> = known.iter().filter(|run| run.name.starts_with("Triplet_")).collect();
    assert_eq!(triplets.len(), 20);
    for run in triplets {
        let instance = run.instance().unwrap_or_else(|e| panic!("{e}"));
        let items: Vec<&Vec<u64>> = instance
            .items
            .iter()
            .map(|(sizes, demand)| {
                assert_eq!(*demand, 1, "{}", run.name);
                sizes
            })
            .collect();
        assert_eq!(items.len() % 3, 0, "{}", run.name);
        assert_eq!(u64::from(run.value), items.len() as u64 / 3, "{}", run.name);
        for (index, triple) in items.chunks(3).enumerate() {
            for (k, &capacity) in instance.capacities.iter().enumerate() {
                let sum: u64 = triple.iter().map(|sizes| sizes[k]).sum();
                assert_eq!(sum, capacity, "{}: triple {index}, resource {k}", run.name);
            }
        }
        assert_eq!(instance.trivial_bound(), u64::from(run.value), "{}", run.name);
    }
}

#[test]
fn small_vector_instances_are_proven_at_their_optimum() {
    // Deterministic (node limit, no clock): a 3-D Panigrahy instance of each of the uniform (class
    // 2) and negatively correlated (class 8) families, and a 2-D triplet instance whose first-fit
    // packing needs 23 bins for the optimal 20.
    let planner = ExactPlanner::new().node_limit(200_000);
    for name in ["Panigrahy_class2_40_3_0", "Panigrahy_class8_40_3_0", "Triplet_classF_60_3_1@2d"] {
        let (run, instance) = stored_vector_run(name);
        let problem = vector_problem(&instance);
        let plan = planner.plan(&problem);
        assert_sound(name, &problem, &plan, instance.item_count(), run.value);
        assert_eq!(plan.status, Status::Optimal, "{name}: {:?} {:?}", plan.stop_reason, plan.bound);
    }
}

#[test]
fn tiny_two_resource_instance_needs_the_pairing() {
    // Memory-heavy (6, 1) and CPU-heavy (1, 6) items: only a mixed pair fills a bin in both
    // resources, Σ = (14, 14) on capacity (10, 10) forces 2 bins, so 2 is optimal; two bins of one
    // kind would not fit (12 > 10).
    let instance = vbp::VbpInstance::parse("tiny2d", "2\n10 10\n2\n6 1 2\n1 6 2\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(instance.trivial_bound(), 2);
    let problem = vector_problem(&instance);
    let plan = ExactPlanner::new().node_limit(10_000).plan(&problem);
    assert_eq!(plan.status, Status::Optimal, "{:?}", plan.stop_reason);
    assert_sound("tiny2d", &problem, &plan, 4, 2);
}

#[test]
fn vector_converter_maps_resources_by_exact_scaling() {
    // Resource 0 has an item of size 0, so memory takes resource 1; resource 0 goes to CPU,
    // resource 2 to accelerators. Equal vectors merge into one component.
    let text = "3\n40 50 8\n3\n0 10 2 1\n12 50 0 2\n0 10 2 1\n";
    let instance = vbp::VbpInstance::parse("mixed", text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(instance.item_count(), 4);
    assert_eq!(instance.carriers(), Ok(vec![vbp::Carrier::Cpu, vbp::Carrier::Memory, vbp::Carrier::Accelerators]));
    let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
    let bin = &scenario.instance_types[0];
    assert_eq!((bin.memory_in_mb, bin.v_cpu_count, bin.accelerator_count), (6400.0, 10.0, 8));
    let problem = vector_problem(&instance);
    let needs: Vec<(String, u32, fleetplan::Resources)> = problem
        .components()
        .iter()
        .map(|c| {
            let need = c.requirements.first().and_then(Option::as_ref).map(|r| r.resources);
            (c.name.clone(), c.copy_count, need.unwrap_or(fleetplan::Resources::ZERO))
        })
        .collect();
    let resources =
        |accelerators, milli_cpus, memory_mib| fleetplan::Resources { accelerators, milli_cpus, memory_mib };
    assert_eq!(
        needs,
        [
            ("item-0000-0010-0002".to_string(), 2, resources(2, 0, 1280)),
            ("item-0012-0050-0000".to_string(), 2, resources(0, 3000, 6400)),
        ]
    );
    assert_eq!(problem.instance_types()[0].capacity, resources(8, 10_000, 6400));
    // Projection keeps the first resources; CPU then carries resource 0 of a 2-D instance.
    let flat = instance.projected(2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(flat.capacities, [40, 50]);
    assert_eq!(flat.carriers(), Ok(vec![vbp::Carrier::Cpu, vbp::Carrier::Memory]));
}

#[test]
fn vector_parser_rejects_malformed_instances() {
    let parse = |text: &str| vbp::VbpInstance::parse("bad", text);
    assert_eq!(parse("2\n10 10\n2\n3 4 1\n"), Err("bad: 2 item types of 3 numbers, file has 3 numbers".into()));
    assert_eq!(parse("2\n10 10\n1\n3 11 1\n"), Err("bad: item size 11 above the capacity 10".into()));
    assert_eq!(parse(""), Err("bad: empty file".into()));
    let Err(message) = parse("2\n100 100\n1\n-2 4 1\n") else { panic!("a negative size parsed") };
    assert!(message.starts_with("bad: \"-2\" is not a size"), "{message}");
    let zeros = vbp::VbpInstance::parse("zeros", "2\n10 10\n2\n0 3 1\n3 0 1\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(zeros.scenario().err(), Some("zeros: every resource has an item of size 0, none can be memory".into()));
    let wide = vbp::VbpInstance::parse("wide", "4\n1 1 1 1\n1\n1 1 1 1 1\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wide.scenario().err(), Some("wide: 4 resources, fleetplan has 3".into()));
}
