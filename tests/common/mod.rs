//! Shared test helpers: bundled scenarios, a proptest generator of random valid scenarios and
//! temporary files for the command-line tests.
#![allow(dead_code)]

use fleetplan::*;
use proptest::prelude::*;

/// Every bundled scenario as (file name, JSON text), sorted by name. Only the files directly in
/// `scenarios/`: its subdirectories hold other documents (`models/` for `fleetplan size`,
/// `simulations/` for the simulator).
pub fn bundled_scenarios() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|extension| extension == "json"))
        .map(|path| {
            let name = path.file_name().expect("file name").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("readable scenario"))
        })
        .collect();
    out.sort();
    out
}

/// A bundled scenario, validated.
pub fn bundled_problem(name: &str) -> Problem {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("bundled scenario exists");
    Problem::from_json(&text).expect("bundled scenario is valid")
}

/// How large random scenarios get.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    /// Most AZs.
    pub azs: usize,
    /// Most pool types.
    pub pool_types: usize,
    /// Most components.
    pub components: usize,
    /// Most copies per component.
    pub copies: u32,
    /// Most existing instances.
    pub fleet: usize,
    /// Most launches per (type, AZ) when limited.
    pub capacity: u32,
}

impl Size {
    /// Small enough for exhaustive enumeration.
    pub const TINY: Size = Size { azs: 2, pool_types: 2, components: 2, copies: 3, fleet: 1, capacity: 2 };
    /// Small enough for the exact planner in a property test.
    pub const SMALL: Size = Size { azs: 3, pool_types: 3, components: 3, copies: 5, fleet: 3, capacity: 3 };
    /// For greedy-only properties.
    pub const MEDIUM: Size = Size { azs: 3, pool_types: 5, components: 8, copies: 12, fleet: 8, capacity: 6 };
}

/// Instance shapes used by generated scenarios: (accelerators, vCPUs, MiB, price).
const SHAPES: &[(u32, u32, u32, f64)] = &[
    (1, 8, 32_768, 1.0),
    (2, 16, 65_536, 2.5),
    (4, 48, 196_608, 4.6),
    (8, 96, 393_216, 13.35),
    (8, 192, 786_432, 30.13),
];

fn type_name(index: usize) -> String {
    format!("ml.test{index}.xlarge")
}

fn az_name(index: usize) -> String {
    format!("zone-{}", (b'a' + index as u8) as char)
}

/// A random requirement: (accelerators, cpu cores ×4, memory MiB).
fn requirement() -> impl Strategy<Value = (u32, u32, u32)> {
    (0u32..=4, 0u32..=32, prop::sample::select(vec![128u32, 8_192, 16_384, 65_536, 131_072]))
}

fn spec_for(
    requirement: (u32, u32, u32),
    instance_type: Option<String>,
    scheduling: Option<SchedulingConfig>,
) -> ComponentSpecification {
    let (accelerators, quarter_cores, memory) = requirement;
    ComponentSpecification {
        instance_type,
        model_name: None,
        compute_resource_requirements: ComputeResourceRequirements {
            number_of_accelerator_devices_required: Some(accelerators),
            number_of_cpu_cores_required: if quarter_cores == 0 { None } else { Some(f64::from(quarter_cores) / 4.0) },
            min_memory_required_in_mb: f64::from(memory),
        },
        scheduling_config: scheduling,
    }
}

/// Random valid scenarios of at most `size`.
pub fn scenario(size: Size) -> impl Strategy<Value = Scenario> {
    let azs = 1..=size.azs;
    let pools = 1..=size.pool_types;
    (azs, pools).prop_flat_map(move |(azs, pools)| {
        let shapes = prop::collection::vec(0..SHAPES.len(), pools);
        let priorities = prop::collection::vec(1u8..=5, pools);
        let priced = any::<bool>();
        let capacity =
            prop::collection::vec(prop::option::of((0..=size.capacity, 0..=size.capacity.min(1))), pools * azs);
        let components = prop::collection::vec(
            (
                requirement(),
                prop::collection::vec(prop::option::of(requirement()), pools),
                any::<bool>(),
                prop::option::of(0u32..=2),
                any::<bool>(),
                0..=size.copies,
            ),
            1..=size.components,
        );
        let fleet = prop::collection::vec(
            (0..pools, 0..azs, any::<bool>(), prop::collection::vec((0usize..8, 1u32..=2), 0..=2)),
            0..=size.fleet,
        );
        let limits = (0u32..=2, prop::option::of(0u32..=8));
        (Just((azs, pools)), shapes, priorities, priced, capacity, components, fleet, limits).prop_map(
            move |((azs, pools), shapes, priorities, priced, capacity, components, fleet, (min, max))| {
                build(azs, pools, &shapes, &priorities, priced, &capacity, &components, &fleet, min, max)
            },
        )
    })
}

type ComponentDraw = ((u32, u32, u32), Vec<Option<(u32, u32, u32)>>, bool, Option<u32>, bool, u32);
type FleetDraw = (usize, usize, bool, Vec<(usize, u32)>);

#[allow(clippy::too_many_arguments)]
fn build(
    azs: usize,
    pools: usize,
    shapes: &[usize],
    priorities: &[u8],
    priced: bool,
    capacity: &[Option<(u32, u32)>],
    components: &[ComponentDraw],
    fleet: &[FleetDraw],
    min: u32,
    max: Option<u32>,
) -> Scenario {
    let mut scenario = Scenario { availability_zones: (0..azs).map(az_name).collect(), ..Default::default() };
    scenario.endpoint.endpoint_name = "ep".into();
    scenario.endpoint.variant_name = "AllTraffic".into();
    for (index, &shape) in shapes.iter().enumerate() {
        let (accelerators, vcpus, memory, price) = SHAPES[shape];
        scenario.instance_types.push(InstanceTypeSpec {
            instance_type: type_name(index),
            accelerator_count: accelerators,
            accelerator_memory_gib: 24.0,
            v_cpu_count: f64::from(vcpus),
            memory_in_mb: f64::from(memory),
            hourly_price: (priced || index > 0).then_some(price),
        });
        scenario.endpoint.instance_pools.push(InstancePool {
            instance_type: type_name(index),
            priority: priorities[index],
            model_name_override: None,
        });
    }
    for (slot, entry) in capacity.iter().enumerate() {
        if let Some((available, reserved)) = entry {
            scenario.capacity.push(CapacityEntry {
                instance_type: type_name(slot % pools),
                availability_zone: az_name(slot / pools),
                available: Some(*available),
                reserved: *reserved,
            });
        }
    }
    let max = max.map(|max| max.max(min));
    scenario.endpoint.managed_instance_scaling = Some(ManagedInstanceScaling {
        status: Some(fleetplan::ScalingStatus::Enabled),
        min_instance_count: Some(min),
        max_instance_count: max,
        scale_in_policy: None,
    });
    for (index, (common, per_type, per_type_mode, balance, spread, copies)) in components.iter().enumerate() {
        let scheduling = Some(SchedulingConfig {
            placement_strategy: Some(if *spread {
                fleetplan::PlacementStrategy::Spread
            } else {
                fleetplan::PlacementStrategy::Binpack
            }),
            availability_zone_balance: balance.map(|limit| AvailabilityZoneBalance {
                enforcement_mode: Some(fleetplan::EnforcementMode::Permissive),
                max_imbalance: Some(limit),
            }),
        });
        let mut component = InferenceComponent {
            inference_component_name: format!("ic-{index}"),
            runtime_config: RuntimeConfig { copy_count: *copies },
            ..Default::default()
        };
        let specs: Vec<ComponentSpecification> = per_type
            .iter()
            .enumerate()
            .filter_map(|(t, req)| req.map(|req| spec_for(req, Some(type_name(t)), scheduling.clone())))
            .collect();
        if *per_type_mode && !specs.is_empty() {
            component.specifications = Some(specs);
        } else {
            component.specification = Some(spec_for(*common, None, scheduling));
        }
        scenario.inference_components.push(component);
    }
    // Fleet: keep only copies that fit, so the scenario stays valid.
    let problem_without_fleet = Problem::new(&scenario).ok();
    for (index, (type_index, az, reserved, copies)) in fleet.iter().enumerate() {
        let id = format!("i-{index}");
        scenario.fleet.instances.push(FleetInstance {
            instance_id: id.clone(),
            instance_type: type_name(*type_index),
            availability_zone: az_name(*az),
            reserved: *reserved,
            state: None,
        });
        let Some(problem) = &problem_without_fleet else { continue };
        let capacity = problem.instance_types()[*type_index].capacity;
        let mut used = Resources::ZERO;
        for &(component, count) in copies {
            let component = component % components.len();
            let Some(Some(requirement)) = problem.components()[component].requirements.get(*type_index) else {
                continue;
            };
            let need = requirement.resources.times(u64::from(count));
            if used.plus(&need).fits_in(&capacity) {
                used = used.plus(&need);
                scenario.fleet.copies.push(FleetCopy {
                    inference_component_name: format!("ic-{component}"),
                    instance_id: id.clone(),
                    copy_count: count,
                });
            }
        }
    }
    scenario
}

/// Random valid problems of at most `size`.
pub fn problem(size: Size) -> impl Strategy<Value = Problem> {
    scenario(size).prop_filter_map("scenario must validate", |scenario| Problem::new(&scenario).ok())
}

/// The scenario with components, pools, AZs, capacity and fleet listed in reverse order.
pub fn reversed(scenario: &Scenario) -> Scenario {
    let mut out = scenario.clone();
    out.availability_zones.reverse();
    out.instance_types.reverse();
    out.capacity.reverse();
    out.endpoint.instance_pools.reverse();
    out.inference_components.reverse();
    for component in &mut out.inference_components {
        if let Some(specs) = &mut component.specifications {
            specs.reverse();
        }
    }
    out.fleet.instances.reverse();
    out.fleet.copies.reverse();
    out
}

/// A file in the temp dir, unique per test process and file (a counter: test modules share one
/// binary and may pick the same names), removed on drop. The name keeps `name` as its suffix.
pub struct TempFile(std::path::PathBuf);

impl TempFile {
    pub fn new(name: &str, contents: &str) -> TempFile {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("fleetplan-test-{}-{number}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
