//! A reproducible sweep of realistic scenarios through the `fleetplan` command line.
//!
//! ```text
//! cargo build --release --features cli,examples --example scenario_sweep
//! target/release/examples/scenario_sweep generate DIR [--count 40] [--seed 1] [--preset sweep|hard]
//! target/release/examples/scenario_sweep run DIR --bin target/release/fleetplan \
//!     [--time-limit-ms 5000] [--out DIR/results]
//! target/release/examples/scenario_sweep optima DIR --bin target/release/fleetplan \
//!     [--out DIR/optima] [--cbc-limit-ms 60000] [--greedy-only]
//! target/release/examples/scenario_sweep check SCENARIO PLAN
//! ```
//!
//! `optima` (the binary built with `--features cli,cbc`) proves each scenario's optimum with the
//! CBC backend and counts how often greedy equals it on L1 and on L1–L3, and how often the exact
//! planner at 1 s and at the CLI's default limit reaches it.
//!
//! `generate` writes `N` spec-valid scenario JSON files from the tests' seeded generator
//! (`tests/common/generator.rs`, preset `SWEEP`, or `HARD` with `--preset hard`: 40–60
//! components, large multi-accelerator copies, a binding Max, events and draining instances;
//! no other randomness):
//! 5–60 components or a single-model endpoint, 1–4 AZs, 1–5 pool types from the built-in
//! catalogue and custom `InstanceTypes`, with or without prices, capacity limits (incl.
//! `Available: 0` and reservations), existing fleets (incl. types outside the pool, reserved
//! instances, components above their desired count), Min/Max (incl. a fleet already above Max),
//! SPREAD/BINPACK, MaxImbalance 0–2, `Specification` or `Specifications`, multi-GPU copies,
//! CopyCount 0 and 1, and unknown keys that must be ignored. Every file is validated with
//! `Problem::new` before it is written; a rejected one is reported (a generator or validator bug).
//!
//! `run` plans each scenario with the CLI (greedy, and exact with a time limit), verifies both
//! plans with `fleetplan verify`, re-checks both with the independent checker below, compares
//! the exact plan with greedy, with its own bound, with a flat-priority greedy witness and (when
//! `Optimal`) with the exact answer on the same scenario with every list reversed, checks that
//! outputs repeat byte for byte, and writes `results.tsv`. `check` runs the independent checker
//! on one plan.
//!
//! The independent checker re-derives spec §2 from the scenario JSON alone (serde structs, the
//! built-in catalogue) without `Problem`, `fleet` or `verify`, so a bug shared by those cannot
//! hide itself: packing, eligibility, capacity and reservations, Min/Max, copy counts, removals,
//! terminations, launch ids, the SPREAD rule from an empty fleet, and L1–L4 against `Objective`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The shared test helpers: the scenario generator, and `common::reversed`, the same-problem
/// reordering the metamorphic check uses (one definition for the tests and the sweep).
#[path = "../tests/common/mod.rs"]
mod common;

use common::generator::{self, Rng};
use common::reversed;
use fleetplan::builtin_instance_types;
use fleetplan::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// The generator: the tests' one seeded generator (`tests/common/generator.rs`), realistic preset.

/// What a generated scenario is, in a few words (for the results table).
struct Generated {
    scenario: Scenario,
    /// Rename `DesiredInstanceCount` to its alias `InitialInstanceCount`.
    alias: bool,
    /// Add unknown keys that must be ignored.
    extra_keys: bool,
}

/// The generator presets `generate --preset` offers: name (also the files' prefix) and preset.
const PRESETS: [(&str, generator::Config); 2] =
    [("sweep", generator::Config::SWEEP), ("hard", generator::Config::HARD)];

/// Scenario `index` of `seed`: the shared generator's `preset` (stream `index`), and how to spell
/// it (a second stream of the same seed, so the scenario itself does not change).
fn generate(seed: u64, index: u64, preset: &generator::Config) -> Generated {
    let scenario = generator::generate_stream(seed, index, preset);
    let mut rng = Rng::new(seed ^ 0x5EED_5EED, index);
    let single_model = scenario.endpoint.model_name.is_some();
    Generated { scenario, alias: single_model && rng.chance(30), extra_keys: rng.chance(30) }
}

/// Drops `null`s (absent and null mean the same) except `Available`, whose null is spelled out
/// by the contract, and empty lists; writes whole numbers as integers.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, v| {
                let dropped_null = v.is_null() && key != "Available";
                let empty_list = matches!(v, Value::Array(items) if items.is_empty());
                !dropped_null && !empty_list
            });
            for v in map.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        // Whole numbers as integers, the way a user writes them (`4`, not `4.0`).
        Value::Number(number) => {
            if let Some(whole) = number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15) {
                *value = Value::from(whole as i64);
            }
        }
        _ => {}
    }
}

fn to_json(generated: &Generated) -> String {
    let mut value = serde_json::to_value(&generated.scenario).expect("a scenario serialises");
    tidy(&mut value);
    if let Some(endpoint) = value.get_mut("Endpoint").and_then(Value::as_object_mut) {
        if generated.alias {
            if let Some(count) = endpoint.remove("DesiredInstanceCount") {
                endpoint.insert("InitialInstanceCount".into(), count);
            }
        }
        if generated.extra_keys {
            endpoint.insert("EndpointConfigName".into(), Value::from("config-1"));
            endpoint
                .insert("RoutingConfig".into(), serde_json::json!({"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}));
        }
    }
    if generated.extra_keys {
        if let Some(map) = value.as_object_mut() {
            map.insert("Tags".into(), serde_json::json!([{"Key": "team", "Value": "ml-platform"}]));
        }
        if let Some(components) = value.get_mut("InferenceComponents").and_then(Value::as_array_mut) {
            for component in components {
                if let Some(map) = component.as_object_mut() {
                    map.insert(
                        "StartupParameters".into(),
                        serde_json::json!({"ModelDataDownloadTimeoutInSeconds": 600}),
                    );
                }
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&value).expect("JSON serialises");
    text.push('\n');
    text
}

fn generate_command(dir: &Path, count: u64, seed: u64, (prefix, preset): (&str, generator::Config)) -> ExitCode {
    if let Err(error) = std::fs::create_dir_all(dir) {
        eprintln!("{}: {error}", dir.display());
        return ExitCode::from(2);
    }
    let mut rejected = 0;
    for index in 0..count {
        let generated = generate(seed, index, &preset);
        let text = to_json(&generated);
        let name = format!("{prefix}-{seed}-{index:03}.json");
        if let Err(error) = Problem::from_json(&text) {
            rejected += 1;
            eprintln!("{name}: rejected by validation (generator or validator bug):\n{error}");
        }
        if let Err(error) = std::fs::write(dir.join(&name), text) {
            eprintln!("{name}: {error}");
            return ExitCode::from(2);
        }
    }
    println!("wrote {count} scenarios to {} ({rejected} rejected by validation)", dir.display());
    ExitCode::from(u8::from(rejected > 0))
}

// ---------------------------------------------------------------------------------------------
// The independent checker.

struct TypeFacts {
    offer: (u64, u64, u64),
    price: Option<f64>,
    priority: u8,
    in_pool: bool,
}

/// Accelerators, milli-cores, MiB.
type Need = (u64, u64, u64);

/// Name, copy count, requirement per type (absent = may not run there), SPREAD, MaxImbalance.
type ComponentFacts = (String, u64, BTreeMap<String, Need>, bool, Option<u64>);

/// An instance of the final fleet: type, AZ, reserved, copies per component, existing.
type CheckedInstance = (String, String, bool, BTreeMap<String, u64>, bool);

struct Facts {
    azs: Vec<String>,
    types: BTreeMap<String, TypeFacts>,
    /// Per component: name, copy count, requirement per type (None = may not run there),
    /// SPREAD, MaxImbalance.
    components: Vec<ComponentFacts>,
    /// (type, az) → (reserved, available).
    limits: BTreeMap<(String, String), (u64, Option<u64>)>,
    min: u64,
    max: Option<u64>,
    /// id → (type, az, reserved, copies per component).
    fleet: BTreeMap<String, (String, String, bool, BTreeMap<String, u64>)>,
    /// Whether the starting fleet has any copy (the SPREAD rule is judged only without).
    empty_start: bool,
    /// (component, type) → model names some reading of the contract runs there: the
    /// specification's `ModelName`, the pool's `ModelNameOverride`, the endpoint's `ModelName`.
    builds: BTreeMap<(String, String), BTreeSet<String>>,
}

fn need_of(requirements: &ComputeResourceRequirements) -> (u64, u64, u64) {
    (
        u64::from(requirements.number_of_accelerator_devices_required.unwrap_or(0)),
        (requirements.number_of_cpu_cores_required.unwrap_or(0.0) * 1000.0).ceil() as u64,
        requirements.min_memory_required_in_mb.ceil() as u64,
    )
}

fn facts(scenario: &Scenario) -> Facts {
    let mut catalogue: BTreeMap<String, InstanceTypeSpec> =
        builtin_instance_types().into_iter().map(|t| (t.instance_type.clone(), t)).collect();
    for spec in &scenario.instance_types {
        catalogue.insert(spec.instance_type.clone(), spec.clone());
    }
    let mut pools: Vec<(String, u8)> =
        scenario.endpoint.instance_pools.iter().map(|p| (p.instance_type.clone(), p.priority)).collect();
    if let Some(name) = &scenario.endpoint.instance_type {
        pools.push((name.clone(), 1));
    }
    let mut types = BTreeMap::new();
    let mut add = |name: &str, priority: u8, in_pool: bool| {
        if let Some(spec) = catalogue.get(name) {
            types.entry(name.to_string()).or_insert(TypeFacts {
                offer: (
                    u64::from(spec.accelerator_count),
                    (spec.v_cpu_count * 1000.0).floor() as u64,
                    spec.memory_in_mb.floor() as u64,
                ),
                price: spec.hourly_price,
                priority,
                in_pool,
            });
        }
    };
    for (name, priority) in &pools {
        add(name, *priority, true);
    }
    for instance in &scenario.fleet.instances {
        add(&instance.instance_type, 6, false);
    }
    let mut components = Vec::new();
    if scenario.inference_components.is_empty() {
        let whole: BTreeMap<String, (u64, u64, u64)> = types.iter().map(|(name, t)| (name.clone(), t.offer)).collect();
        let count = u64::from(scenario.endpoint.desired_instance_count.unwrap_or(0));
        components.push((scenario.endpoint.variant_name.clone(), count, whole, true, Some(1)));
    }
    for component in &scenario.inference_components {
        let mut requirements = BTreeMap::new();
        let mut config = None;
        if let Some(spec) = &component.specification {
            for name in types.keys() {
                requirements.insert(name.clone(), need_of(&spec.compute_resource_requirements));
            }
            config = spec.scheduling_config.clone();
        }
        for spec in component.specifications.iter().flatten() {
            if let Some(name) = &spec.instance_type {
                requirements.insert(name.clone(), need_of(&spec.compute_resource_requirements));
            }
            config = config.or_else(|| spec.scheduling_config.clone());
        }
        let spread = config.as_ref().and_then(|c| c.placement_strategy) != Some(PlacementStrategy::Binpack);
        let max_imbalance = config
            .as_ref()
            .and_then(|c| c.availability_zone_balance.as_ref())
            .map(|b| u64::from(b.max_imbalance.unwrap_or(0)));
        components.push((
            component.inference_component_name.clone(),
            u64::from(component.runtime_config.copy_count),
            requirements,
            spread,
            max_imbalance,
        ));
    }
    let limits = scenario
        .capacity
        .iter()
        .map(|c| {
            (
                (c.instance_type.clone(), c.availability_zone.clone()),
                (u64::from(c.reserved), c.available.map(u64::from)),
            )
        })
        .collect();
    let scaling = scenario.endpoint.managed_instance_scaling.clone().unwrap_or_default();
    let mut fleet: BTreeMap<String, (String, String, bool, BTreeMap<String, u64>)> = scenario
        .fleet
        .instances
        .iter()
        .map(|i| {
            (i.instance_id.clone(), (i.instance_type.clone(), i.availability_zone.clone(), i.reserved, BTreeMap::new()))
        })
        .collect();
    if scenario.inference_components.is_empty() && scenario.fleet.copies.is_empty() && !components.is_empty() {
        for entry in fleet.values_mut() {
            entry.3.insert(scenario.endpoint.variant_name.clone(), 1);
        }
    }
    for copy in &scenario.fleet.copies {
        if let Some(entry) = fleet.get_mut(&copy.instance_id) {
            if copy.copy_count > 0 {
                *entry.3.entry(copy.inference_component_name.clone()).or_insert(0) += u64::from(copy.copy_count);
            }
        }
    }
    let empty_start = fleet.values().all(|entry| entry.3.is_empty());
    let mut builds: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let overrides: BTreeMap<&str, &str> = scenario
        .endpoint
        .instance_pools
        .iter()
        .filter_map(|p| p.model_name_override.as_deref().map(|m| (p.instance_type.as_str(), m)))
        .collect();
    for (name, _, requirements, ..) in &components {
        let specs: Vec<&ComponentSpecification> = scenario
            .inference_components
            .iter()
            .filter(|c| c.inference_component_name == *name)
            .flat_map(|c| c.specification.iter().chain(c.specifications.iter().flatten()))
            .collect();
        for type_name in requirements.keys() {
            let entry = builds.entry((name.clone(), type_name.clone())).or_default();
            for spec in &specs {
                if spec.instance_type.as_ref().is_none_or(|t| t == type_name) {
                    entry.extend(spec.model_name.clone());
                }
            }
            entry.extend(overrides.get(type_name.as_str()).map(|m| m.to_string()));
            entry.extend(scenario.endpoint.model_name.clone());
        }
    }
    Facts {
        azs: scenario.availability_zones.clone(),
        types,
        components,
        limits,
        min: u64::from(scaling.min_instance_count.unwrap_or(0)),
        max: scaling.max_instance_count.map(u64::from),
        fleet,
        empty_start,
        builds,
    }
}

/// What the checker found: violations, and the objective it recomputed.
struct Checked {
    /// Broken hard constraints and structural errors.
    violations: Vec<String>,
    /// Where the plan's own `Objective` and `Unplaced` disagree with the recomputation.
    accounting: Vec<String>,
    /// L1–L4 recomputed from the actions.
    objective: Objective,
    /// Copies short of CopyCount, per component (only components short of it).
    missing: BTreeMap<String, u64>,
}

fn check(scenario: &Scenario, plan: &Plan) -> Checked {
    let facts = facts(scenario);
    let mut violations = Vec::new();
    // Instances: id → (type, az, reserved, copies, existing).
    let mut instances: BTreeMap<String, CheckedInstance> = facts
        .fleet
        .iter()
        .map(|(id, (t, z, r, c))| (id.clone(), (t.clone(), z.clone(), *r, c.clone(), true)))
        .collect();
    let mut launches: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let mut launch_number = 0;
    let mut placed_per_component: BTreeMap<String, u64> = BTreeMap::new();
    let mut removed_per_component: BTreeMap<String, u64> = BTreeMap::new();
    let mut terminated = BTreeSet::new();
    for action in &plan.actions {
        match action {
            Action::LaunchInstance { instance_id, instance_type, availability_zone, reserved } => {
                launch_number += 1;
                if *instance_id != format!("new-{launch_number}") {
                    violations.push(format!("launch {launch_number} is named {instance_id}"));
                }
                if !facts.types.get(instance_type).is_some_and(|t| t.in_pool) {
                    violations.push(format!("{instance_id}: launches {instance_type}, not a pool type"));
                }
                if !facts.azs.contains(availability_zone) {
                    violations.push(format!("{instance_id}: unknown AZ {availability_zone}"));
                }
                let entry = launches.entry((instance_type.clone(), availability_zone.clone())).or_default();
                entry.0 += 1;
                entry.1 += u64::from(*reserved);
                if instances
                    .insert(
                        instance_id.clone(),
                        (instance_type.clone(), availability_zone.clone(), *reserved, BTreeMap::new(), false),
                    )
                    .is_some()
                {
                    violations.push(format!("{instance_id} launched twice or clashes with the fleet"));
                }
            }
            Action::PlaceCopy { component, instance_id, model_name } => {
                *placed_per_component.entry(component.clone()).or_default() += 1;
                match instances.get_mut(instance_id) {
                    Some(instance) => {
                        // Which build runs is the project's choice where the contract is
                        // silent; only a name that no rule gives for this type is wrong.
                        if let Some(name) = model_name {
                            if !facts
                                .builds
                                .get(&(component.clone(), instance.0.clone()))
                                .is_some_and(|b| b.contains(name))
                            {
                                violations.push(format!(
                                    "{component} on {instance_id}: model {name:?} is no build for {}",
                                    instance.0
                                ));
                            }
                        }
                        let eligible = facts.types.get(&instance.0).is_some_and(|t| t.in_pool)
                            && facts.components.iter().any(|c| c.0 == *component && c.2.contains_key(&instance.0));
                        if !eligible {
                            violations
                                .push(format!("{component} placed on {instance_id} ({}): not eligible", instance.0));
                        }
                        *instance.3.entry(component.clone()).or_default() += 1;
                    }
                    None => violations.push(format!("{component} placed on unknown instance {instance_id}")),
                }
            }
            Action::RemoveCopy { component, instance_id } => {
                *removed_per_component.entry(component.clone()).or_default() += 1;
                match instances.get_mut(instance_id).filter(|i| i.4) {
                    Some(instance) => match instance.3.get_mut(component) {
                        Some(count) if *count > 0 => *count -= 1,
                        _ => violations.push(format!("removes a {component} copy {instance_id} does not run")),
                    },
                    None => violations.push(format!("removes a copy from {instance_id}, not an existing instance")),
                }
            }
            Action::TerminateInstance { instance_id } => {
                if !facts.fleet.contains_key(instance_id) {
                    violations.push(format!("terminates {instance_id}, not an existing instance"));
                }
                if !terminated.insert(instance_id.clone()) {
                    violations.push(format!("terminates {instance_id} twice"));
                }
            }
            other => violations.push(format!("an action this checker does not know: {other:?}")),
        }
    }
    for id in &terminated {
        if let Some(instance) = instances.remove(id) {
            if instance.3.values().any(|&c| c > 0) {
                violations.push(format!("terminates {id}, which still runs copies"));
            }
        }
    }
    // Removals only of components above their desired count; never together with placements.
    for (component, removed) in &removed_per_component {
        let desired = facts.components.iter().find(|c| c.0 == *component).map_or(0, |c| c.1);
        let running: u64 = facts.fleet.values().map(|i| i.3.get(component).copied().unwrap_or(0)).sum();
        if running.saturating_sub(*removed) < desired {
            violations.push(format!("removes {removed} {component} copies: {running} run, {desired} desired"));
        }
        if placed_per_component.get(component).is_some_and(|&p| p > 0) {
            violations.push(format!("{component}: copies both removed and placed (a move)"));
        }
    }
    // Packing.
    for (id, (type_name, _, _, copies, _)) in &instances {
        let Some(facts_of_type) = facts.types.get(type_name) else { continue };
        let mut used = (0u64, 0u64, 0u64);
        for (component, &count) in copies {
            match facts.components.iter().find(|c| c.0 == *component).and_then(|c| c.2.get(type_name)) {
                Some(need) => {
                    used = (used.0 + need.0 * count, used.1 + need.1 * count, used.2 + need.2 * count);
                }
                None if count > 0 => violations.push(format!("{id}: runs {component}, which has no requirement there")),
                None => {}
            }
        }
        let offer = facts_of_type.offer;
        if used.0 > offer.0 || used.1 > offer.1 || used.2 > offer.2 {
            violations.push(format!("{id} ({type_name}) overbooked: uses {used:?} of {offer:?}"));
        }
    }
    // Capacity and reservations.
    for ((type_name, az), (count, reserved)) in &launches {
        let (slots, available) = facts.limits.get(&(type_name.clone(), az.clone())).copied().unwrap_or((0, None));
        if let Some(available) = available {
            if *count > slots + available {
                violations.push(format!("{count} launches of {type_name} in {az}, limit {}", slots + available));
            }
        }
        if *reserved > slots {
            violations.push(format!("{reserved} reserved launches of {type_name} in {az}, {slots} reservation slots"));
        }
    }
    // Instance bounds.
    let size = instances.len() as u64;
    if size < facts.min {
        violations.push(format!("{size} instances < MinInstanceCount {}", facts.min));
    }
    if let Some(max) = facts.max {
        if launch_number > 0 && size > max {
            violations.push(format!("{size} instances > MaxInstanceCount {max} while launching"));
        }
    }
    // Empty existing instances kept beyond the minimum.
    let idle_existing = instances.values().filter(|i| i.4 && i.3.values().all(|&c| c == 0)).count() as u64;
    if idle_existing > 0 && size > facts.min {
        violations.push(format!("{idle_existing} existing instances left empty with {size} > Min {}", facts.min));
    }
    // Copy counts and objective.
    let mut placed = 0;
    let mut balance_excess = 0;
    for (name, desired, requirements, spread, max_imbalance) in &facts.components {
        let mut per_az: BTreeMap<&str, u64> = facts.azs.iter().map(|z| (z.as_str(), 0)).collect();
        for (_, az, _, copies, _) in instances.values() {
            *per_az.entry(az.as_str()).or_default() += copies.get(name).copied().unwrap_or(0);
        }
        let total: u64 = per_az.values().sum();
        placed += total;
        if total > *desired {
            violations.push(format!("{name}: {total} copies in the final fleet, CopyCount {desired}"));
        }
        if let Some(limit) = max_imbalance {
            let most = per_az.values().max().copied().unwrap_or(0);
            let fewest = per_az.values().min().copied().unwrap_or(0);
            balance_excess += (most - fewest).saturating_sub(*limit);
        }
        // SPREAD from an empty fleet: in each AZ, no instance holds ≥ 2 more than another
        // eligible instance there with room for one more copy.
        if *spread && facts.empty_start {
            for az in &facts.azs {
                let here: Vec<(&String, &CheckedInstance)> = instances.iter().filter(|(_, i)| i.1 == *az).collect();
                for (id_high, high) in &here {
                    let high_count = high.3.get(name).copied().unwrap_or(0);
                    for (id_low, low) in &here {
                        let low_count = low.3.get(name).copied().unwrap_or(0);
                        let Some(need) = requirements.get(&low.0) else { continue };
                        if high_count < low_count + 2 || !facts.types.get(&low.0).is_some_and(|t| t.in_pool) {
                            continue;
                        }
                        let mut used = *need;
                        for (other, &count) in &low.3 {
                            if let Some(n) =
                                facts.components.iter().find(|c| c.0 == *other).and_then(|c| c.2.get(&low.0))
                            {
                                used = (used.0 + n.0 * count, used.1 + n.1 * count, used.2 + n.2 * count);
                            }
                        }
                        let offer = facts.types[&low.0].offer;
                        if used.0 <= offer.0 && used.1 <= offer.1 && used.2 <= offer.2 {
                            violations.push(format!(
                                "SPREAD {name} in {az}: {id_high} holds {high_count}, {id_low} holds {low_count} and has room"
                            ));
                        }
                    }
                }
            }
        }
    }
    let mut instances_by_priority: BTreeMap<u8, u32> = BTreeMap::new();
    for (type_name, ..) in instances.values() {
        let priority = facts.types.get(type_name).map_or(6, |t| t.priority);
        *instances_by_priority.entry(priority).or_default() += 1;
    }
    let unit = instances.values().any(|i| facts.types.get(&i.0).is_none_or(|t| t.price.is_none()));
    let cost_micros = instances
        .values()
        .filter(|i| !i.2)
        .map(|i| {
            if unit {
                1_000_000
            } else {
                facts.types.get(&i.0).and_then(|t| t.price).map_or(0, |p| (p * 1e6).round() as i128)
            }
        })
        .sum();
    let cost_unit = if unit { CostUnit::Instances } else { CostUnit::UsdPerHour };
    let objective = Objective { placed_copies: placed, balance_excess, instances_by_priority, cost_micros, cost_unit };
    let mut accounting = Vec::new();
    let mut missing_per_component = BTreeMap::new();
    if objective != plan.objective {
        accounting.push(format!("reported objective {:?} differs from recomputed {:?}", plan.objective, objective));
    }
    // `Unplaced`: one entry per component short of its CopyCount, with that many copies.
    for (name, desired, ..) in &facts.components {
        let have: u64 = instances.values().map(|i| i.3.get(name).copied().unwrap_or(0)).sum();
        let missing = desired.saturating_sub(have);
        if missing > 0 {
            missing_per_component.insert(name.clone(), missing);
        }
        let reported: u64 =
            plan.unplaced.iter().filter(|u| u.inference_component_name == *name).map(|u| u.copy_count).sum();
        if missing != reported {
            accounting.push(format!("{name}: {missing} copies missing, Unplaced says {reported}"));
        }
        if missing > 0 && plan.unplaced.iter().any(|u| u.inference_component_name == *name && u.reasons.is_empty()) {
            accounting.push(format!("{name}: unplaced without a reason"));
        }
    }
    Checked { violations, accounting, objective, missing: missing_per_component }
}

// ---------------------------------------------------------------------------------------------
// The run.

/// CPU seconds (user + system) of this process's waited-for children, from /proc/self/stat.
fn children_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let Some((_, rest)) = stat.rsplit_once(')') else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(13) + ticks(14)) / 100.0
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    wall: f64,
    cpu: f64,
}

fn run_cli(bin: &Path, args: &[&str]) -> Ran {
    let cpu_before = children_cpu_seconds();
    let started = Instant::now();
    let output = Command::new(bin).args(args).output();
    let wall = started.elapsed().as_secs_f64();
    let cpu = children_cpu_seconds() - cpu_before;
    match output {
        Ok(output) => Ran {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            wall,
            cpu,
        },
        Err(error) => Ran { code: -1, stdout: String::new(), stderr: error.to_string(), wall, cpu },
    }
}

fn objective_text(objective: &Objective) -> String {
    let priorities: Vec<String> = objective.instances_by_priority.iter().map(|(p, n)| format!("p{p}:{n}")).collect();
    format!(
        "placed {} excess {} [{}] cost {:.3}",
        objective.placed_copies,
        objective.balance_excess,
        priorities.join(" "),
        objective.cost()
    )
}

fn stop_text(stop: &StopReason) -> String {
    stop.to_string()
}

/// The `.json` files of `dir`, sorted (None, reported, when it cannot be read).
fn scenario_files(dir: &Path) -> Option<Vec<PathBuf>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            Some(files)
        }
        Err(error) => {
            eprintln!("{}: {error}", dir.display());
            None
        }
    }
}

fn run_command(dir: &Path, bin: &Path, time_limit_ms: u64, out: &Path) -> ExitCode {
    let Some(files) = scenario_files(dir) else { return ExitCode::from(2) };
    if let Err(error) = std::fs::create_dir_all(out) {
        eprintln!("{}: {error}", out.display());
        return ExitCode::from(2);
    }
    let limit = time_limit_ms.to_string();
    let mut tsv = String::from(
        "scenario\tcomponents\tcopies\tazs\tpools\tfleet\tgreedy_exit\tgreedy_s\tgreedy_objective\texact_exit\t\
         exact_status\texact_stop\texact_wall_s\texact_cpu_s\texact_objective\tbound\twitness\tverify_greedy\tverify_exact\t\
         problems\n",
    );
    let mut problems_total = 0;
    for file in &files {
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let path = file.to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let scenario: Option<Scenario> = serde_json::from_str(&text).ok();
        let (components, copies, azs, pools, fleet) = match (&scenario, Problem::from_json(&text)) {
            (_, Ok(problem)) => (
                problem.components().len(),
                problem.components().iter().map(|c| u64::from(c.copy_count)).sum::<u64>(),
                problem.azs().len(),
                problem.pool_types().count(),
                problem.fleet().len(),
            ),
            _ => (0, 0, 0, 0, 0),
        };
        let mut problems: Vec<String> = Vec::new();
        let greedy = run_cli(bin, &["plan", &path, "--json"]);
        let greedy_again = run_cli(bin, &["plan", &path, "--json"]);
        if greedy.stdout != greedy_again.stdout {
            problems.push("greedy output differs between two runs".into());
        }
        let exact = run_cli(bin, &["plan", &path, "--solver", "exact", "--time-limit-ms", &limit, "--json"]);
        let mut parsed = Vec::new();
        let mut verified = Vec::new();
        for (label, ran) in [("greedy", &greedy), ("exact", &exact)] {
            if ran.stderr.contains("panicked") {
                problems.push(format!("{label}: panic: {}", ran.stderr.lines().next().unwrap_or_default()));
            }
            if ran.code != 0 {
                problems.push(format!("{label}: exit {} on a valid scenario: {}", ran.code, ran.stderr.trim()));
            }
            let plan_path = out.join(format!("{name}.{label}.json"));
            let _ = std::fs::write(&plan_path, &ran.stdout);
            let plan: Option<Plan> = serde_json::from_str(&ran.stdout).ok();
            if plan.is_none() && ran.code == 0 {
                problems.push(format!("{label}: output is not a plan"));
            }
            let verify = run_cli(bin, &["verify", &path, &plan_path.to_string_lossy(), "--json"]);
            let accepted = verified_as_claimed(&verify, plan.as_ref());
            if !accepted {
                let first = verify.stdout.lines().chain(verify.stderr.lines()).take(3).collect::<Vec<_>>().join(" | ");
                problems.push(format!("{label}: verify exit {}: {first}", verify.code));
            }
            verified.push(if accepted { 0 } else { verify.code });
            if let (Some(plan), Some(scenario)) = (&plan, &scenario) {
                let checked = check(scenario, plan);
                // An Infeasible plan is expected to break a hard constraint; report only the rest.
                for violation in checked.violations.iter().chain(&checked.accounting) {
                    if plan.status == Status::Infeasible && violation.contains("MinInstanceCount") {
                        continue;
                    }
                    problems.push(format!("{label}: independent check: {violation}"));
                }
            }
            parsed.push(plan);
        }
        let (greedy_plan, exact_plan) = (parsed[0].as_ref(), parsed[1].as_ref());
        // A quick exact run must be deterministic too.
        if exact.wall < 1.0 && exact.code == 0 {
            let again = run_cli(bin, &["plan", &path, "--solver", "exact", "--time-limit-ms", &limit, "--json"]);
            if again.stdout != exact.stdout {
                problems.push("exact output differs between two runs".into());
            }
        }
        // Metamorphic: the same scenario with every list reversed has the same optimum, so two
        // `Optimal` answers must agree (a disagreement means a false proof).
        if exact_plan.is_some_and(|p| p.status == Status::Optimal) {
            let reordered = scenario.as_ref().and_then(|scenario| {
                let reversed_path = out.join(format!("{name}.reversed-scenario.json"));
                std::fs::write(&reversed_path, serde_json::to_string_pretty(&reversed(scenario)).ok()?).ok()?;
                let ran = run_cli(
                    bin,
                    &[
                        "plan",
                        &reversed_path.to_string_lossy(),
                        "--solver",
                        "exact",
                        "--time-limit-ms",
                        &limit,
                        "--json",
                    ],
                );
                serde_json::from_str::<Plan>(&ran.stdout).ok()
            });
            match (reordered, exact_plan) {
                (Some(other), Some(first)) if other.status == Status::Optimal && other.objective != first.objective => {
                    problems.push(format!(
                        "BUG: two Optimal answers differ: {} vs {} (lists reversed)",
                        objective_text(&first.objective),
                        objective_text(&other.objective)
                    ));
                }
                (Some(other), Some(first)) if other.objective.better_than(&first.objective) => {
                    problems.push(format!(
                        "BUG: Optimal {} beaten by {} with lists reversed",
                        objective_text(&first.objective),
                        objective_text(&other.objective)
                    ));
                }
                _ => {}
            }
        }
        // A witness: greedy on the same scenario with every pool at priority 1. Its plan is
        // feasible for the original (priorities only rank); scored on the original, it is a known
        // objective the exact planner should not lose to.
        let witness = scenario.as_ref().and_then(|scenario| {
            let mut flat = scenario.clone();
            flat.endpoint.instance_pools.iter_mut().for_each(|pool| pool.priority = 1);
            let flat_path = out.join(format!("{name}.flat-scenario.json"));
            std::fs::write(&flat_path, serde_json::to_string_pretty(&flat).ok()?).ok()?;
            let ran = run_cli(bin, &["plan", &flat_path.to_string_lossy(), "--json"]);
            let plan: Plan = serde_json::from_str(&ran.stdout).ok()?;
            let checked = check(scenario, &plan);
            (checked.violations.is_empty() && plan.status != Status::Infeasible).then_some(checked.objective)
        });
        if let (Some(g), Some(e)) = (greedy_plan, exact_plan) {
            if e.objective.key() > g.objective.key() {
                problems.push(format!(
                    "exact worse than greedy: {} vs {}",
                    objective_text(&e.objective),
                    objective_text(&g.objective)
                ));
            }
            if let Some(bound) = &e.bound {
                if bound.key() > e.objective.key() || bound.key() > g.objective.key() {
                    problems.push(format!("bound {} is above a plan found", objective_text(bound)));
                }
                if e.status == Status::Optimal && bound.key() < e.objective.key() {
                    problems.push(format!("Optimal claimed with bound {} below the objective", objective_text(bound)));
                }
            }
            if let Some(witness) = &witness {
                if witness.key() < e.objective.key() {
                    let worse = if e.status == Status::Optimal { "BUG: Optimal " } else { "quality: " };
                    problems.push(format!(
                        "{worse}exact {} loses to greedy-with-flat-priorities {}",
                        objective_text(&e.objective),
                        objective_text(witness)
                    ));
                }
                if e.bound.as_ref().is_some_and(|bound| bound.key() > witness.key()) {
                    problems.push("bound is above the flat-priority witness".into());
                }
            }
            // A search cut short may still end at a plan that meets its proven bound: `Optimal`
            // with the limit's stop reason. Such a plan must carry no bound (it is its own).
            if e.status == Status::Optimal && e.bound.is_some() {
                problems.push(format!("Optimal with a bound (stop reason {})", stop_text(&e.stop_reason)));
            }
        }
        let greedy_objective = greedy_plan.map_or("-".into(), |p| objective_text(&p.objective));
        let exact_objective = exact_plan.map_or("-".into(), |p| {
            if greedy_plan.is_some_and(|g| g.objective == p.objective) {
                "= greedy".into()
            } else {
                objective_text(&p.objective)
            }
        });
        let bound = exact_plan.and_then(|p| p.bound.as_ref()).map_or("-".into(), objective_text);
        let witness_text = witness.as_ref().map_or("-".into(), objective_text);
        let status = exact_plan.map_or("-".into(), |p| format!("{:?}", p.status));
        let stop = exact_plan.map_or("-".into(), |p| stop_text(&p.stop_reason));
        problems_total += problems.len();
        let _ = writeln!(
            tsv,
            "{name}\t{components}\t{copies}\t{azs}\t{pools}\t{fleet}\t{}\t{:.3}\t{greedy_objective}\t{}\t{status}\t\
             {stop}\t{:.3}\t{:.2}\t{exact_objective}\t{bound}\t{witness_text}\t{}\t{}\t{}",
            greedy.code,
            greedy.wall,
            exact.code,
            exact.wall,
            exact.cpu,
            verified[0],
            verified[1],
            problems.join("; ").replace(['\t', '\n'], " ")
        );
        println!(
            "{name}: {components} components, {copies} copies, {azs} AZs, {pools} pools, fleet {fleet}: exact {status} \
             ({stop}) in {:.2}s, {} problems",
            exact.wall,
            problems.len()
        );
        for problem in &problems {
            println!("  ! {problem}");
        }
    }
    let results = out.join("results.tsv");
    if let Err(error) = std::fs::write(&results, tsv) {
        eprintln!("{}: {error}", results.display());
        return ExitCode::from(2);
    }
    println!("{} scenarios, {problems_total} problems; results in {}", files.len(), results.display());
    ExitCode::from(u8::from(problems_total > 0))
}

/// One deterministic corruption of a plan, or `None` when it does not apply.
fn mutate(rng: &mut Rng, scenario: &Scenario, plan: &Plan, kind: usize) -> Option<(String, Vec<Action>)> {
    let mut actions = plan.actions.clone();
    let places: Vec<usize> =
        actions.iter().enumerate().filter(|(_, a)| matches!(a, Action::PlaceCopy { .. })).map(|(i, _)| i).collect();
    let launches: Vec<usize> = actions
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Action::LaunchInstance { .. }))
        .map(|(i, _)| i)
        .collect();
    let existing: Vec<&FleetInstance> = scenario.fleet.instances.iter().collect();
    let components: Vec<String> = if scenario.inference_components.is_empty() {
        vec![scenario.endpoint.variant_name.clone()]
    } else {
        scenario.inference_components.iter().map(|c| c.inference_component_name.clone()).collect()
    };
    let label = match kind {
        0 if !places.is_empty() => {
            actions.remove(places[rng.below(places.len())]);
            "drop a PlaceCopy"
        }
        1 if !places.is_empty() => {
            let copy = actions[places[rng.below(places.len())]].clone();
            actions.push(copy);
            "duplicate a PlaceCopy"
        }
        2 if !launches.is_empty() && scenario.availability_zones.len() > 1 => {
            if let Action::LaunchInstance { availability_zone, .. } = &mut actions[launches[rng.below(launches.len())]]
            {
                let others: Vec<&String> =
                    scenario.availability_zones.iter().filter(|z| *z != availability_zone).collect();
                *availability_zone = rng.pick(&others).clone();
            }
            "move a launch to another AZ"
        }
        3 if !launches.is_empty() => {
            if let Action::LaunchInstance { reserved, .. } = &mut actions[launches[rng.below(launches.len())]] {
                *reserved = !*reserved;
            }
            "flip Reserved on a launch"
        }
        4 if !existing.is_empty() => {
            let instance = rng.pick(&existing);
            actions.push(Action::TerminateInstance { instance_id: instance.instance_id.clone() });
            "terminate an existing instance"
        }
        5 if !existing.is_empty() => {
            let instance = rng.pick(&existing);
            actions.push(Action::RemoveCopy {
                component: rng.pick(&components),
                instance_id: instance.instance_id.clone(),
            });
            "remove a copy from an existing instance"
        }
        6 if !existing.is_empty() => {
            let instance = rng.pick(&existing);
            actions.push(Action::PlaceCopy {
                component: rng.pick(&components),
                instance_id: instance.instance_id.clone(),
                model_name: None,
            });
            "place a copy on an existing instance"
        }
        7 => {
            let pools: Vec<String> = scenario
                .endpoint
                .instance_pools
                .iter()
                .map(|p| p.instance_type.clone())
                .chain(scenario.endpoint.instance_type.clone())
                .collect();
            actions.insert(
                0,
                Action::LaunchInstance {
                    instance_id: String::new(),
                    instance_type: rng.pick(&pools),
                    availability_zone: rng.pick(&scenario.availability_zones),
                    reserved: rng.chance(30),
                },
            );
            // Keep ids in launch order: the inserted launch becomes new-1 and every old new-K,
            // with the copies placed on it, becomes new-(K+1).
            let mut next = 0;
            for action in &mut actions {
                if let Action::LaunchInstance { instance_id, .. } = action {
                    next += 1;
                    *instance_id = format!("new-{next}");
                }
            }
            let mut shifted = Vec::new();
            for action in actions {
                shifted.push(match action {
                    Action::PlaceCopy { component, instance_id, model_name } => {
                        Action::PlaceCopy { component, instance_id: shift(&instance_id), model_name }
                    }
                    other => other,
                });
            }
            actions = shifted;
            "launch one more instance (empty)"
        }
        8 if !places.is_empty() && !launches.is_empty() => {
            let target = match &actions[launches[rng.below(launches.len())]] {
                Action::LaunchInstance { instance_id, .. } => instance_id.clone(),
                _ => return None,
            };
            if let Action::PlaceCopy { instance_id, .. } = &mut actions[places[rng.below(places.len())]] {
                *instance_id = target;
            }
            "move a new copy to another new instance"
        }
        9 if launches.len() > 1 => {
            if let Action::LaunchInstance { instance_id, .. } = &mut actions[launches[0]] {
                *instance_id = "new-0".to_string();
            }
            "misnumber a launch id"
        }
        _ => return None,
    };
    Some((label.to_string(), actions))
}

/// `new-K` → `new-(K+1)`; other ids unchanged.
fn shift(id: &str) -> String {
    match id.strip_prefix("new-").and_then(|n| n.parse::<u32>().ok()) {
        Some(n) => format!("new-{}", n + 1),
        None => id.to_string(),
    }
}

/// Corrupts each greedy plan of a results directory in several ways, makes the reported
/// objective and `Unplaced` consistent with the corrupted actions (so only hard constraints
/// differ), and compares `verify` with the independent checker: any disagreement is printed.
fn mutate_command(scenarios: &Path, results: &Path) -> ExitCode {
    let Some(files) = scenario_files(scenarios) else { return ExitCode::from(2) };
    let (mut tried, mut disagreements) = (0, 0);
    for (index, file) in files.iter().enumerate() {
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let (Ok(scenario), Ok(problem)) = (serde_json::from_str::<Scenario>(&text), Problem::from_json(&text)) else {
            continue;
        };
        for label in ["greedy", "exact"] {
            let Ok(plan_text) = std::fs::read_to_string(results.join(format!("{name}.{label}.json"))) else { continue };
            let Ok(plan) = serde_json::from_str::<Plan>(&plan_text) else { continue };
            let mut rng = Rng::new(7, index as u64);
            for kind in 0..10 {
                let Some((what, actions)) = mutate(&mut rng, &scenario, &plan, kind) else { continue };
                let mut corrupted = Plan { actions, ..plan.clone() };
                let recomputed = check(&scenario, &corrupted);
                corrupted.objective = recomputed.objective.clone();
                corrupted.bound = None;
                corrupted.unplaced = recomputed
                    .missing
                    .iter()
                    .map(|(component, &missing)| Unplaced {
                        inference_component_name: component.clone(),
                        copy_count: missing,
                        reasons: vec!["mutated".into()],
                        causes: Vec::new(),
                    })
                    .collect();
                let mine = check(&scenario, &corrupted);
                let theirs = verify(&problem, &corrupted);
                // SPREAD is a quality rule that `verify` reports and the checker reports too.
                let mine_bad = !mine.violations.is_empty() || !mine.accounting.is_empty();
                let theirs_bad = !theirs.is_empty();
                tried += 1;
                if mine_bad != theirs_bad {
                    disagreements += 1;
                    println!("{name} {label}: {what}: checker {:?} | verify {:?}", mine.violations, theirs);
                    let _ = std::fs::write(
                        results.join(format!("{name}.{label}.mutated-{kind}.json")),
                        corrupted.to_json(),
                    );
                }
            }
        }
    }
    println!("{tried} corrupted plans, {disagreements} disagreements between verify and the independent checker");
    ExitCode::from(u8::from(disagreements > 0))
}

fn check_command(scenario_path: &str, plan_path: &str) -> ExitCode {
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let result = read(scenario_path).and_then(|s| read(plan_path).map(|p| (s, p))).and_then(|(s, p)| {
        let scenario: Scenario = serde_json::from_str(&s).map_err(|e| format!("{scenario_path}: {e}"))?;
        let plan: Plan = serde_json::from_str(&p).map_err(|e| format!("{plan_path}: {e}"))?;
        Ok(check(&scenario, &plan))
    });
    match result {
        Ok(checked) => {
            println!("recomputed: {}", objective_text(&checked.objective));
            for violation in checked.violations.iter().chain(&checked.accounting) {
                println!("! {violation}");
            }
            ExitCode::from(u8::from(!checked.violations.is_empty() || !checked.accounting.is_empty()))
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Against proven optima.

/// What `optima` compares: greedy and the exact planner at 1 s and at the CLI's default limit.
const OPTIMA_RUNS: [(&str, &[&str]); 3] = [
    ("greedy", &[]),
    ("exact-1s", &["--solver", "exact", "--time-limit-ms", "1000"]),
    ("exact-default", &["--solver", "exact"]),
];

/// How a plan compares with a proven optimum: (L1 equal, L1–L3 equal, all levels equal).
fn levels_equal(plan: &Objective, optimum: &Objective) -> (bool, bool, bool) {
    let (p, o) = (plan.key(), optimum.key());
    let l1 = p.unplaced_negated == o.unplaced_negated;
    let l3 = l1 && p.balance_excess == o.balance_excess && p.fallback_counts == o.fallback_counts;
    (l1, l3, p == o)
}

/// Whether `fleetplan verify --json` found the plan as it claims to be: no violation, or an
/// `Infeasible` plan whose only violations are the instance bounds it could not meet (the
/// contract's closest plan when, say, no pool type may launch and MinInstanceCount is 1).
fn verified_as_claimed(verify: &Ran, plan: Option<&Plan>) -> bool {
    if verify.code == 0 {
        return true;
    }
    let infeasible = plan.is_some_and(|plan| plan.status == Status::Infeasible);
    let kinds: Option<Vec<String>> = serde_json::from_str::<Vec<serde_json::Value>>(&verify.stdout)
        .ok()
        .map(|violations| violations.iter().map(|v| v["Kind"].as_str().unwrap_or_default().to_string()).collect());
    infeasible && kinds.is_some_and(|kinds| !kinds.is_empty() && kinds.iter().all(|kind| kind == "InstanceBounds"))
}

/// A plan from the CLI, or None (reported) when the run failed or its plan does not verify.
fn planned(bin: &Path, scenario: &str, args: &[&str], out: &Path) -> Option<Plan> {
    let mut all = vec!["plan", scenario, "--json"];
    all.extend_from_slice(args);
    let ran = run_cli(bin, &all);
    let plan: Option<Plan> = serde_json::from_str(&ran.stdout).ok();
    let _ = std::fs::write(out, &ran.stdout);
    let verify = run_cli(bin, &["verify", scenario, &out.to_string_lossy(), "--json"]);
    if ran.code != 0 || plan.is_none() || !verified_as_claimed(&verify, plan.as_ref()) {
        eprintln!("{scenario} {args:?}: exit {}, verify exit {}: {}", ran.code, verify.code, ran.stderr.trim());
        return None;
    }
    plan
}

/// `optima DIR --bin B [--out OUT] [--cbc-limit-ms N] [--greedy-only]`: how greedy and the exact
/// planner at 1 s and at the default limit compare with each scenario's proven optimum: the
/// exact planner's own proof at the default limit, else the CBC backend's (a binary built with
/// `--features cli,cbc`); kept in OUT as `NAME.optimum.json` and reused by later runs.
fn optima_command(dir: &Path, bin: &Path, out: &Path, cbc_limit_ms: u64, greedy_only: bool) -> ExitCode {
    let Some(files) = scenario_files(dir) else { return ExitCode::from(2) };
    if let Err(error) = std::fs::create_dir_all(out) {
        eprintln!("{}: {error}", out.display());
        return ExitCode::from(2);
    }
    let cbc_limit = cbc_limit_ms.to_string();
    let runs = if greedy_only { &OPTIMA_RUNS[..1] } else { &OPTIMA_RUNS[..] };
    // Per run: scenarios with a proven optimum, L1 equal, L1–L3 equal, all equal, failures.
    let mut counts = vec![[0usize; 5]; runs.len()];
    println!(
        "scenario\tcomponents\tcopies\tazs\toptimum\tproof_s\t{}",
        runs.iter().map(|(label, _)| *label).collect::<Vec<_>>().join("\t")
    );
    for file in &files {
        let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let path = file.to_string_lossy().into_owned();
        let Ok(problem) =
            std::fs::read_to_string(file).map_err(|_| ()).and_then(|t| Problem::from_json(&t).map_err(|_| ()))
        else {
            eprintln!("{name}: not a valid scenario");
            continue;
        };
        let plans: Vec<Option<Plan>> = runs
            .iter()
            .map(|(label, args)| planned(bin, &path, args, &out.join(format!("{name}.{label}.json"))))
            .collect();
        // The optimum: kept from an earlier run, else the exact planner's own proof at the
        // default limit, else CBC's.
        let optimum_path = out.join(format!("{name}.optimum.json"));
        let kept = std::fs::read_to_string(&optimum_path).ok().and_then(|t| serde_json::from_str::<Plan>(&t).ok());
        let started = Instant::now();
        let proven = |plan: &Option<Plan>| plan.as_ref().filter(|plan| plan.status == Status::Optimal).cloned();
        let optimum =
            kept.or_else(|| proven(&plans[runs.len() - 1]).filter(|_| runs.len() == OPTIMA_RUNS.len())).or_else(|| {
                let args = ["--solver", "exact", "--backend", "cbc", "--time-limit-ms", &cbc_limit];
                proven(&planned(bin, &path, &args, &out.join(format!("{name}.cbc.json"))))
            });
        let cbc_s = started.elapsed().as_secs_f64();
        if let Some(plan) = &optimum {
            let _ = std::fs::write(&optimum_path, serde_json::to_string(plan).unwrap_or_default());
        }
        let optimum = optimum.map(|plan| plan.objective);
        let copies: u64 = problem.components().iter().map(|c| u64::from(c.copy_count)).sum();
        let mut line = format!(
            "{name}\t{}\t{copies}\t{}\t{}\t{cbc_s:.2}",
            problem.components().len(),
            problem.azs().len(),
            optimum.as_ref().map_or_else(|| "unproven".to_string(), objective_text)
        );
        for (plan, count) in plans.iter().zip(&mut counts) {
            let cell = match (plan, &optimum) {
                (None, _) => {
                    count[4] += 1;
                    "FAILED".to_string()
                }
                (Some(plan), None) => objective_text(&plan.objective),
                (Some(plan), Some(optimum)) => {
                    let (l1, l3, all) = levels_equal(&plan.objective, optimum);
                    count[0] += 1;
                    count[1] += usize::from(l1);
                    count[2] += usize::from(l3);
                    count[3] += usize::from(all);
                    if plan.objective.key() < optimum.key() {
                        count[4] += 1; // better than a proven optimum: a false proof somewhere
                    }
                    let mark = if all {
                        "="
                    } else if l3 {
                        "=L3"
                    } else if l1 {
                        "=L1"
                    } else {
                        "MISS"
                    };
                    format!("{mark} {}", objective_text(&plan.objective))
                }
            };
            let _ = write!(line, "\t{cell}");
        }
        println!("{line}");
    }
    for ((label, _), [proven, l1, l3, all, failed]) in runs.iter().zip(&counts) {
        println!(
            "{label}: of {proven} proven optima: L1 equal {l1}, L1-L3 equal {l3}, all levels equal {all}; \
             failed or better than the optimum {failed}"
        );
    }
    ExitCode::from(u8::from(counts.iter().any(|c| c[4] > 0)))
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: scenario_sweep generate DIR [--count N] [--seed S] [--preset sweep|hard] | run DIR --bin FLEETPLAN \
                 [--time-limit-ms N] [--out DIR] | optima DIR --bin FLEETPLAN [--out DIR] [--cbc-limit-ms N] \
                 [--greedy-only] | check SCENARIO PLAN";
    match (args.first().map(String::as_str), args.get(1)) {
        (Some("generate"), Some(dir)) => {
            let count = flag(&args, "--count").and_then(|n| n.parse().ok()).unwrap_or(40);
            let seed = flag(&args, "--seed").and_then(|n| n.parse().ok()).unwrap_or(1);
            let wanted = flag(&args, "--preset").unwrap_or("sweep");
            let Some(&preset) = PRESETS.iter().find(|(name, _)| *name == wanted) else {
                eprintln!("{usage}");
                return ExitCode::from(2);
            };
            generate_command(Path::new(dir), count, seed, preset)
        }
        (Some("run"), Some(dir)) => {
            let bin = PathBuf::from(flag(&args, "--bin").unwrap_or("target/release/fleetplan"));
            let limit = flag(&args, "--time-limit-ms").and_then(|n| n.parse().ok()).unwrap_or(5000);
            let out = flag(&args, "--out").map_or_else(|| Path::new(dir).join("results"), PathBuf::from);
            run_command(Path::new(dir), &bin, limit, &out)
        }
        (Some("optima"), Some(dir)) => {
            let bin = PathBuf::from(flag(&args, "--bin").unwrap_or("target/release/fleetplan"));
            let cbc_limit = flag(&args, "--cbc-limit-ms").and_then(|n| n.parse().ok()).unwrap_or(60_000);
            let out = flag(&args, "--out").map_or_else(|| Path::new(dir).join("optima"), PathBuf::from);
            optima_command(Path::new(dir), &bin, &out, cbc_limit, args.iter().any(|a| a == "--greedy-only"))
        }
        (Some("mutate"), Some(dir)) => {
            let results = flag(&args, "--results").map_or_else(|| Path::new(dir).join("results"), PathBuf::from);
            mutate_command(Path::new(dir), &results)
        }
        (Some("check"), Some(scenario)) => match args.get(2) {
            Some(plan) => check_command(scenario, plan),
            None => {
                eprintln!("{usage}");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("{usage}");
            ExitCode::from(2)
        }
    }
}
