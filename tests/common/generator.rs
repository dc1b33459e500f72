//! The one seeded scenario generator. Every property test (through `common::scenario` and
//! `common::problem`) and the sweep example (`examples/scenario_sweep.rs`) draw from it: a `u64`
//! seed and a [`Config`] describe a scenario, and the same pair always gives the same scenario.
//!
//! Every scenario it returns is valid (tests/generator.rs checks that and that each knob does what
//! it says): existing copies are added only where they are eligible and fit, by the contract's
//! own arithmetic (accelerators, vCPUs × 1000 milli-cores, MiB).
#![allow(dead_code)]

use std::collections::BTreeSet;

use fleetplan::catalogue::builtin_instance_types;
use fleetplan::{
    AvailabilityZoneBalance, CapacityEntry, CapacityEvent, ComponentSpecification, ComputeResourceRequirements,
    FleetCopy, FleetInstance, InferenceComponent, InstancePool, InstanceTypeSpec, ManagedInstanceScaling,
    RuntimeConfig, ScaleInPolicySpec, Scenario, SchedulingConfig,
};
use proptest::prelude::*;

/// xorshift64*, seeded through splitmix64 so that each (seed, stream) pair has its own sequence.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator for scenario `stream` of `seed` (the sweep numbers its files by stream).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut z = seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_add(0x632B_E59B_D9B4_E019);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            lo
        } else {
            lo + self.below((hi - lo + 1) as usize) as u32
        }
    }

    /// True with `percent` % probability.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// A uniformly chosen item of a non-empty slice.
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Where instance types come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    /// Five made-up types `ml.test0.xlarge`… (1–8 accelerators, 8–192 vCPUs), always declared.
    Test,
    /// Random small types `ml.t0`… (1–4 accelerators, 2–8 vCPUs, 2–8 GiB): few copies per
    /// instance, for the exact planner and the brute-force oracle.
    Tiny,
    /// The built-in catalogue with list prices plus three custom types; pools keep to one family
    /// (small, medium or large accelerators) most of the time, as a user's would.
    Catalogue,
}

/// What a generated scenario may contain. Ranges are inclusive `(lo, hi)`; `*_percent` fields are
/// chances in percent.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Where the instance types come from.
    pub shapes: Shapes,
    /// Number of availability zones.
    pub azs: (u32, u32),
    /// Number of pool types.
    pub pool_types: (u32, u32),
    /// Number of inference components.
    pub components: (u32, u32),
    /// CopyCount per component.
    pub copies: (u32, u32),
    /// Most copies of all components together (later components get what is left).
    pub total_copies: Option<u32>,
    /// Most accelerators one copy needs.
    pub accelerators: u32,
    /// Share of components with PlacementStrategy SPREAD (the rest BINPACK).
    pub spread_percent: u32,
    /// Share of components with an AvailabilityZoneBalance.
    pub balance_percent: u32,
    /// MaxImbalance is drawn from `0..=max_imbalance`.
    pub max_imbalance: u32,
    /// Share of components with per-type `Specifications` instead of one `Specification`.
    pub per_type_percent: u32,
    /// Share of components that fit no pool type (more accelerators than any has).
    pub oversized_percent: u32,
    /// Share of scenarios where some or all types have no price.
    pub unpriced_percent: u32,
    /// Share of (pool type, AZ) pairs with a Capacity entry.
    pub capacity_percent: u32,
    /// Most instances `Available` in a limited Capacity entry.
    pub capacity_max: u32,
    /// Most instances `Reserved` in a Capacity entry (0: no reservations).
    pub reserved_max: u32,
    /// Number of existing instances.
    pub fleet: (u32, u32),
    /// Share of scenarios without any existing instance.
    pub empty_fleet_percent: u32,
    /// Copy placements tried per existing instance (each of 1–2 copies; kept when they fit).
    pub fleet_copies: (u32, u32),
    /// Share of existing instances of a type outside the pool.
    pub outsider_percent: u32,
    /// Share of existing instances that are reserved.
    pub reserved_percent: u32,
    /// Share of existing instances that are draining.
    pub draining_percent: u32,
    /// Every CopyCount equals the copies running now (a fleet to consolidate, nothing to launch).
    pub copies_follow_fleet: bool,
    /// Share of components running copies that want fewer than run.
    pub scale_in_percent: u32,
    /// MinInstanceCount.
    pub min_instances: (u32, u32),
    /// Share of scenarios with a MaxInstanceCount.
    pub max_percent: u32,
    /// A CONSOLIDATION scale-in policy with this MaximumStepSize range.
    pub step_size: Option<(u32, u32)>,
    /// Most capacity events (with them come `Now` and a capacity-error TTL).
    pub events: u32,
    /// Share of single-model endpoints (no inference components).
    pub single_model_percent: u32,
    /// Model names and pool overrides on (some) specifications.
    pub model_names: bool,
    /// Names, priorities, Min/Max and scale-in policies the way users write them (region AZ
    /// names, a priority ladder, a Max below the fleet, random policies, shorthand pools).
    pub realistic: bool,
    /// Share of scenarios whose pool is of the multi-accelerator families (2–8 accelerators per
    /// instance) and whose copies need 2, 4 or 8 accelerators where the type has them.
    pub large_copies_percent: u32,
    /// Share of scenarios whose MaxInstanceCount is drawn around the instances the copies need
    /// at best (70–130 % of a fractional packing bound), so that it mostly binds.
    pub binding_max_percent: u32,
    /// Share of scenarios that have draining instances and capacity events at all (0: every
    /// scenario draws them by `draining_percent` and `events`).
    pub eventful_percent: u32,
}

impl Config {
    /// Small enough for the brute-force oracle: at most 5 copies in all and one instance.
    pub const TINY: Config = Config {
        shapes: Shapes::Tiny,
        azs: (1, 2),
        pool_types: (1, 2),
        components: (1, 3),
        copies: (0, 3),
        total_copies: Some(5),
        accelerators: 2,
        spread_percent: 50,
        balance_percent: 50,
        max_imbalance: 1,
        per_type_percent: 30,
        oversized_percent: 0,
        unpriced_percent: 10,
        capacity_percent: 50,
        capacity_max: 2,
        reserved_max: 1,
        fleet: (0, 1),
        empty_fleet_percent: 70,
        fleet_copies: (1, 2),
        outsider_percent: 0,
        reserved_percent: 0,
        draining_percent: 0,
        copies_follow_fleet: false,
        scale_in_percent: 20,
        min_instances: (0, 2),
        max_percent: 50,
        step_size: None,
        events: 0,
        single_model_percent: 0,
        model_names: false,
        realistic: false,
        large_copies_percent: 0,
        binding_max_percent: 0,
        eventful_percent: 0,
    };

    /// Small enough for the exact planner in a property test.
    pub const SMALL: Config = Config {
        shapes: Shapes::Test,
        azs: (1, 3),
        pool_types: (1, 3),
        components: (1, 3),
        copies: (0, 5),
        total_copies: None,
        accelerators: 4,
        spread_percent: 50,
        balance_percent: 60,
        max_imbalance: 2,
        per_type_percent: 40,
        oversized_percent: 3,
        unpriced_percent: 50,
        capacity_percent: 40,
        capacity_max: 3,
        reserved_max: 1,
        fleet: (0, 3),
        empty_fleet_percent: 20,
        fleet_copies: (0, 2),
        outsider_percent: 0,
        reserved_percent: 50,
        draining_percent: 0,
        scale_in_percent: 20,
        min_instances: (0, 2),
        max_percent: 50,
        ..Config::TINY
    };

    /// For greedy-only properties.
    pub const MEDIUM: Config = Config {
        pool_types: (1, 5),
        components: (1, 8),
        copies: (0, 12),
        capacity_max: 6,
        fleet: (0, 8),
        ..Config::SMALL
    };

    /// The greedy planner's properties: catalogue types, outsiders in the fleet, model names,
    /// mostly SPREAD.
    pub const CATALOGUE: Config = Config {
        shapes: Shapes::Catalogue,
        components: (1, 8),
        copies: (0, 6),
        spread_percent: 70,
        outsider_percent: 15,
        reserved_percent: 20,
        capacity_percent: 60,
        capacity_max: 3,
        reserved_max: 2,
        fleet_copies: (0, 4),
        scale_in_percent: 30,
        max_percent: 40,
        model_names: true,
        ..Config::MEDIUM
    };

    /// A running fleet to consolidate: CopyCount is what runs, a step size, a floor.
    pub const CONSOLIDATION: Config = Config {
        components: (1, 4),
        copies: (0, 0),
        fleet: (0, 9),
        empty_fleet_percent: 5,
        fleet_copies: (0, 4),
        outsider_percent: 15,
        reserved_percent: 15,
        capacity_percent: 0,
        copies_follow_fleet: true,
        scale_in_percent: 0,
        min_instances: (0, 3),
        max_percent: 0,
        step_size: Some((1, 3)),
        ..Config::SMALL
    };

    /// A running fleet on mixed (fallback) pool types to rebalance: CopyCount is what runs,
    /// 3–4 AZs, SPREAD and balanced components, `MaximumStepSize` 1–5, some instances draining,
    /// capacity mostly open.
    pub const FALLBACK_FLEET: Config = Config {
        azs: (3, 4),
        pool_types: (2, 4),
        components: (1, 5),
        copies: (0, 0),
        fleet: (1, 10),
        empty_fleet_percent: 0,
        fleet_copies: (1, 4),
        capacity_percent: 20,
        reserved_percent: 10,
        draining_percent: 12,
        copies_follow_fleet: true,
        scale_in_percent: 0,
        min_instances: (0, 2),
        max_percent: 20,
        step_size: Some((1, 5)),
        ..Config::SMALL
    };

    /// The sweep's realistic scenarios: 5–60 components or a single model, up to 4 AZs and 12
    /// instances, everything a user's file may hold.
    pub const SWEEP: Config = Config {
        shapes: Shapes::Catalogue,
        azs: (1, 4),
        pool_types: (1, 5),
        components: (5, 60),
        copies: (0, 24),
        total_copies: None,
        accelerators: 8,
        spread_percent: 40,
        balance_percent: 65,
        max_imbalance: 2,
        per_type_percent: 35,
        oversized_percent: 4,
        unpriced_percent: 35,
        capacity_percent: 50,
        capacity_max: 6,
        reserved_max: 3,
        fleet: (1, 12),
        empty_fleet_percent: 45,
        fleet_copies: (1, 4),
        outsider_percent: 15,
        reserved_percent: 20,
        draining_percent: 0,
        copies_follow_fleet: false,
        scale_in_percent: 30,
        min_instances: (0, 4),
        max_percent: 60,
        step_size: None,
        events: 0,
        single_model_percent: 12,
        model_names: true,
        realistic: true,
        large_copies_percent: 0,
        binding_max_percent: 0,
        eventful_percent: 0,
    };

    /// The third held-out set's character: 2–4 AZs, 40–60 components, larger multi-accelerator
    /// copies, a MaxInstanceCount that binds, capacity events and draining instances on half of
    /// the endpoints.
    pub const HARD: Config = Config {
        azs: (2, 4),
        components: (40, 60),
        fleet: (2, 16),
        empty_fleet_percent: 30,
        draining_percent: 35,
        max_percent: 100,
        events: 6,
        single_model_percent: 0,
        large_copies_percent: 70,
        binding_max_percent: 80,
        eventful_percent: 50,
        ..Config::SWEEP
    };

    /// The same configuration with exactly `azs` AZs, `components` components and `fleet`
    /// existing instances (how the proptest strategies shrink towards small scenarios).
    pub fn sized(mut self, azs: u32, components: u32, fleet: u32) -> Config {
        self.azs = (azs, azs);
        self.components = (components, components);
        self.fleet = (fleet, fleet);
        if fleet == 0 {
            self.empty_fleet_percent = 100;
        }
        self
    }
}

/// An instance type the generator may use.
#[derive(Debug, Clone)]
struct Shape {
    name: String,
    accelerators: u32,
    vcpus: u32,
    memory_mib: u32,
    price: f64,
    /// Whether an `InstanceTypes` entry is needed even without a price (not in the catalogue).
    custom: bool,
}

impl Shape {
    /// 0: small (0–1 accelerators), 1: medium (2–6), 2: large.
    fn family(&self) -> usize {
        match self.accelerators {
            0 | 1 => 0,
            2..=6 => 1,
            _ => 2,
        }
    }

    fn spec(&self, price: Option<f64>) -> InstanceTypeSpec {
        InstanceTypeSpec {
            instance_type: self.name.clone(),
            accelerator_count: self.accelerators,
            accelerator_memory_gib: 24.0,
            v_cpu_count: f64::from(self.vcpus),
            memory_in_mb: f64::from(self.memory_mib),
            hourly_price: price,
        }
    }
}

/// The test shapes: (accelerators, vCPUs, MiB, price).
const TEST_SHAPES: &[(u32, u32, u32, f64)] = &[
    (1, 8, 32_768, 1.0),
    (2, 16, 65_536, 2.5),
    (4, 48, 196_608, 4.6),
    (8, 96, 393_216, 13.35),
    (8, 192, 786_432, 30.13),
];

/// Approximate public on-demand list prices (us-east-1) of the catalogue's types.
const PRICES: &[(&str, f64)] = &[
    ("ml.p5.48xlarge", 113.07),
    ("ml.p5e.48xlarge", 120.0),
    ("ml.p5en.48xlarge", 124.0),
    ("ml.p4d.24xlarge", 37.69),
    ("ml.p4de.24xlarge", 47.11),
    ("ml.g5.xlarge", 1.408),
    ("ml.g5.2xlarge", 1.515),
    ("ml.g5.4xlarge", 2.03),
    ("ml.g5.8xlarge", 3.06),
    ("ml.g5.12xlarge", 7.09),
    ("ml.g5.16xlarge", 5.12),
    ("ml.g5.24xlarge", 10.18),
    ("ml.g5.48xlarge", 20.36),
    ("ml.g6.xlarge", 1.167),
    ("ml.g6.2xlarge", 1.222),
    ("ml.g6.4xlarge", 1.6),
    ("ml.g6.8xlarge", 2.5),
    ("ml.g6.12xlarge", 5.752),
    ("ml.g6.16xlarge", 4.2),
    ("ml.g6.24xlarge", 8.3),
    ("ml.g6.48xlarge", 13.35),
    ("ml.g6e.xlarge", 2.24),
    ("ml.g6e.2xlarge", 2.71),
    ("ml.g6e.4xlarge", 3.6),
    ("ml.g6e.8xlarge", 5.45),
    ("ml.g6e.12xlarge", 13.12),
    ("ml.g6e.16xlarge", 9.1),
    ("ml.g6e.24xlarge", 16.4),
    ("ml.g6e.48xlarge", 30.13),
    ("ml.inf2.xlarge", 0.99),
    ("ml.inf2.8xlarge", 2.36),
    ("ml.inf2.24xlarge", 7.79),
    ("ml.inf2.48xlarge", 15.58),
];

/// Custom catalogue additions a user would declare: (name, accelerators, vCPUs, MiB, price).
const CUSTOM: &[(&str, u32, u32, u32, f64)] = &[
    ("ml.trn1.32xlarge", 16, 128, 524_288, 24.78),
    ("ml.g4dn.12xlarge", 4, 48, 196_608, 4.89),
    ("ml.c7i.8xlarge", 0, 32, 65_536, 1.71),
];

fn shapes(rng: &mut Rng, kind: Shapes) -> Vec<Shape> {
    match kind {
        Shapes::Test => TEST_SHAPES
            .iter()
            .enumerate()
            .map(|(index, &(accelerators, vcpus, memory_mib, price))| Shape {
                name: format!("ml.test{index}.xlarge"),
                accelerators,
                vcpus,
                memory_mib,
                price,
                custom: true,
            })
            .collect(),
        Shapes::Tiny => (0..3)
            .map(|index| Shape {
                name: format!("ml.t{index}"),
                accelerators: rng.range(1, 4),
                vcpus: rng.range(2, 8),
                memory_mib: rng.pick(&[2_048, 4_096, 8_192]),
                price: f64::from(rng.range(1, 5)),
                custom: true,
            })
            .collect(),
        Shapes::Catalogue => {
            let mut out: Vec<Shape> = builtin_instance_types()
                .into_iter()
                .map(|spec| Shape {
                    price: PRICES.iter().find(|(name, _)| *name == spec.instance_type).map_or(1.0, |&(_, p)| p),
                    name: spec.instance_type,
                    accelerators: spec.accelerator_count,
                    vcpus: spec.v_cpu_count as u32,
                    memory_mib: spec.memory_in_mb as u32,
                    custom: false,
                })
                .collect();
            for &(name, accelerators, vcpus, memory_mib, price) in CUSTOM {
                out.push(Shape { name: name.into(), accelerators, vcpus, memory_mib, price, custom: true });
            }
            out
        }
    }
}

/// (accelerators, cores (None: absent), MiB) of a copy sized for `shape`; `oversized` needs
/// more accelerators than `shape` has.
fn requirement_for(
    rng: &mut Rng,
    shape: &Shape,
    config: &Config,
    oversized: bool,
    large: bool,
) -> (u32, Option<f64>, u32) {
    if oversized {
        return (shape.accelerators + rng.range(1, 8), Some(1.0), 1_024);
    }
    let most = shape.accelerators.min(config.accelerators);
    let accelerators = if most == 0 || rng.chance(10) {
        0
    } else {
        let sizes: &[u32] = if large { &[1, 2, 2, 4, 4, 8] } else { &[1, 1, 1, 2, 2, 4, 8] };
        let options: Vec<u32> = sizes.iter().copied().filter(|&a| a <= most).collect();
        rng.pick(&options)
    };
    let half_cpus = f64::from(shape.vcpus) / 2.0;
    let cores: Vec<Option<f64>> = [None, Some(0.25), Some(0.5), Some(1.0), Some(2.0), Some(4.0), Some(8.0), Some(16.0)]
        .into_iter()
        .filter(|cores| cores.is_none_or(|cores| cores <= half_cpus))
        .collect();
    let memory: Vec<u32> = [512u32, 1_024, 2_048, 4_096, 8_192, 16_384, 24_576, 32_768, 65_536, 131_072, 262_144]
        .into_iter()
        .filter(|&mib| mib <= shape.memory_mib / 2)
        .collect();
    (accelerators, rng.pick(&cores), if memory.is_empty() { 128 } else { rng.pick(&memory) })
}

/// Resources of one copy: (accelerators, milli-cores, MiB).
type Need = (u64, u64, u64);

/// Resources of one copy in (accelerators, milli-cores, MiB), as validation counts them.
fn need_of((accelerators, cores, memory): (u32, Option<f64>, u32)) -> Need {
    (u64::from(accelerators), (cores.unwrap_or(0.0) * 1000.0).ceil() as u64, u64::from(memory))
}

fn specification(
    requirement: (u32, Option<f64>, u32),
    instance_type: Option<String>,
    model_name: Option<String>,
    scheduling: Option<SchedulingConfig>,
) -> ComponentSpecification {
    let (accelerators, cores, memory) = requirement;
    ComponentSpecification {
        instance_type,
        model_name,
        compute_resource_requirements: ComputeResourceRequirements {
            number_of_accelerator_devices_required: Some(accelerators),
            number_of_cpu_cores_required: cores,
            min_memory_required_in_mb: f64::from(memory),
        },
        scheduling_config: scheduling,
    }
}

/// The scenario of `seed` under `config`.
pub fn generate(seed: u64, config: &Config) -> Scenario {
    generate_stream(seed, 0, config)
}

/// Scenario number `stream` of `seed` under `config` (the sweep's files are streams 0, 1, …).
pub fn generate_stream(seed: u64, stream: u64, config: &Config) -> Scenario {
    let mut rng = Rng::new(seed, stream);
    // Draws only for the knobs that are on, so that other presets keep their streams.
    let mut config = *config;
    if config.eventful_percent > 0 && !rng.chance(config.eventful_percent) {
        config.draining_percent = 0;
        config.events = 0;
    }
    let large_copies = config.large_copies_percent > 0 && rng.chance(config.large_copies_percent);
    let config = &config;
    let all = shapes(&mut rng, config.shapes);
    let realistic = config.realistic;
    let single_model = rng.chance(config.single_model_percent);

    let az_count = rng.range(config.azs.0.max(1), config.azs.1) as usize;
    let azs: Vec<String> = if realistic {
        let region = rng.pick(&["us-east-1", "us-west-2", "eu-west-1"]);
        (0..az_count).map(|z| format!("{region}{}", (b'a' + z as u8) as char)).collect()
    } else {
        (0..az_count).map(|z| format!("zone-{}", (b'a' + z as u8) as char)).collect()
    };

    // Pool types: distinct; in the catalogue mostly one family, sometimes a neighbour.
    let families = config.shapes == Shapes::Catalogue;
    let family_wanted = if large_copies { 1 + rng.below(2) } else { rng.below(3) };
    let pool_count = (rng.range(config.pool_types.0.max(1), config.pool_types.1) as usize).min(all.len());
    let mut pool: Vec<Shape> = Vec::new();
    while pool.len() < pool_count {
        let wanted = if rng.chance(20) { rng.below(3) } else { family_wanted };
        let candidates: Vec<&Shape> = all
            .iter()
            .filter(|s| !families || s.family() == wanted)
            .filter(|s| !pool.iter().any(|p| p.name == s.name))
            .filter(|s| !families || !s.custom || rng.chance(30))
            .collect();
        if candidates.is_empty() {
            continue;
        }
        pool.push(candidates[rng.below(candidates.len())].clone());
    }

    let mut scenario = Scenario { availability_zones: azs.clone(), ..Default::default() };
    scenario.endpoint.endpoint_name = if realistic { format!("endpoint-{stream}") } else { "ep".into() };
    scenario.endpoint.variant_name =
        if realistic { rng.pick(&["AllTraffic", "primary", "blue"]).to_string() } else { "AllTraffic".into() };

    // Priorities: a ladder 1, 2, 3 … with ties and gaps, or independent draws (many ties).
    let mut priority = 1u32;
    let shorthand = realistic && pool.len() == 1 && rng.chance(40);
    for (position, shape) in pool.iter().enumerate() {
        priority = if !realistic {
            rng.range(1, if config.shapes == Shapes::Tiny { 2 } else { 5 })
        } else if position == 0 {
            1
        } else {
            (priority + if rng.chance(15) { 0 } else { rng.range(1, 2) }).min(5)
        };
        if shorthand {
            scenario.endpoint.instance_type = Some(shape.name.clone());
        } else {
            let trimmed = shape.name.trim_start_matches("ml.");
            scenario.endpoint.instance_pools.push(InstancePool {
                instance_type: shape.name.clone(),
                priority: u8::try_from(priority).unwrap_or(u8::MAX),
                model_name_override: (config.model_names && rng.chance(20)).then(|| format!("build-{trimmed}")),
            });
        }
    }

    // Existing instances' types: pool types, or outsiders (same family, not in the pool).
    let outside: Vec<Shape> = all
        .iter()
        .filter(|s| (!families || s.family() == family_wanted) && !pool.iter().any(|p| p.name == s.name))
        .cloned()
        .collect();
    let fleet_size =
        if rng.chance(config.empty_fleet_percent) { 0 } else { rng.range(config.fleet.0, config.fleet.1) as usize };
    let fleet_shapes: Vec<Shape> = (0..fleet_size)
        .map(|_| {
            if !outside.is_empty() && rng.chance(config.outsider_percent) {
                rng.pick(&outside)
            } else {
                rng.pick(&pool)
            }
        })
        .collect();

    // Prices: all, some or none. Types outside the catalogue are declared either way.
    let unpriced = rng.chance(config.unpriced_percent);
    let none_priced = unpriced && rng.chance(40);
    let mut declared: BTreeSet<String> = BTreeSet::new();
    for shape in pool.iter().chain(&fleet_shapes) {
        if !declared.insert(shape.name.clone()) {
            continue;
        }
        let priced = !unpriced || (!none_priced && rng.chance(50));
        if priced || shape.custom {
            scenario.instance_types.push(shape.spec(priced.then_some(shape.price)));
        }
    }

    // Capacity per (pool type, AZ): blocked, blocked but reserved, limited, or reserved only.
    for shape in &pool {
        for az in &azs {
            let scarce = if realistic && shape.family() == 2 { 20 } else { 0 };
            if !rng.chance((config.capacity_percent + scarce).min(100)) {
                continue;
            }
            let some_reserved = |rng: &mut Rng| rng.range(config.reserved_max.min(1), config.reserved_max);
            let (available, reserved) = match rng.below(100) {
                0..=29 => (Some(0), 0),
                30..=44 => (Some(0), some_reserved(&mut rng)),
                45..=79 => (
                    Some(rng.range(1, config.capacity_max.max(1))),
                    if rng.chance(20) { rng.range(0, config.reserved_max) } else { 0 },
                ),
                _ => (None, some_reserved(&mut rng)),
            };
            if available.is_none() && reserved == 0 {
                continue; // an entry saying nothing
            }
            scenario.capacity.push(CapacityEntry {
                instance_type: shape.name.clone(),
                availability_zone: az.clone(),
                available,
                reserved,
            });
        }
    }

    // Components, with each one's resources per copy on every type it may use.
    let component_count = if single_model { 0 } else { rng.range(config.components.0, config.components.1) as usize };
    let mut components: Vec<InferenceComponent> = Vec::new();
    let mut needs: Vec<Vec<(String, Need)>> = Vec::new();
    let mut copies_left = config.total_copies;
    for c in 0..component_count {
        let name = if realistic {
            format!("{}-{c:02}", rng.pick(&["chat", "embed", "rerank", "vision", "code", "asr", "llm"]))
        } else {
            format!("ic-{c}")
        };
        let balance = rng.chance(config.balance_percent).then(|| AvailabilityZoneBalance {
            enforcement_mode: (!realistic || rng.chance(80)).then_some(fleetplan::EnforcementMode::Permissive),
            max_imbalance: if realistic && rng.chance(10) { None } else { Some(rng.range(0, config.max_imbalance)) },
        });
        let strategy = if rng.chance(config.spread_percent) { "SPREAD" } else { "BINPACK" };
        let scheduling = if realistic {
            // Users leave the strategy out (SPREAD by default) or the whole config.
            (balance.is_some() || rng.chance(60)).then(|| SchedulingConfig {
                placement_strategy: (strategy == "BINPACK" || rng.chance(70)).then_some(placement(strategy)),
                availability_zone_balance: balance,
            })
        } else {
            Some(SchedulingConfig { placement_strategy: Some(placement(strategy)), availability_zone_balance: balance })
        };
        let oversized = rng.chance(config.oversized_percent);
        let wanted = if realistic {
            match rng.below(100) {
                0..=4 => 0,
                5..=14 => 1,
                15..=64 => rng.range(2, 4),
                65..=92 => rng.range(5, 10),
                _ => rng.range(11, 24),
            }
            .clamp(config.copies.0, config.copies.1)
        } else {
            rng.range(config.copies.0, config.copies.1)
        };
        let copies = match &mut copies_left {
            Some(left) => {
                let copies = wanted.min(*left);
                *left -= copies;
                copies
            }
            None => wanted,
        };
        let mut component = InferenceComponent {
            inference_component_name: name.clone(),
            runtime_config: RuntimeConfig { copy_count: copies },
            ..Default::default()
        };
        let mut need = Vec::new();
        if pool.len() > 1 && rng.chance(config.per_type_percent) {
            let mut types: Vec<Shape> = pool.clone();
            rng.shuffle(&mut types);
            types.truncate(rng.range(1, pool.len() as u32) as usize);
            // In the pool's order, as a user would list them.
            types.sort_by_key(|t| pool.iter().position(|p| p.name == t.name));
            let on_first_only = realistic && rng.chance(20);
            let mut specs = Vec::new();
            for (position, shape) in types.iter().enumerate() {
                let requirement = requirement_for(&mut rng, shape, config, oversized, large_copies);
                need.push((shape.name.clone(), need_of(requirement)));
                let trimmed = shape.name.trim_start_matches("ml.");
                let model = (config.model_names && rng.chance(60)).then(|| format!("{name}-{trimmed}"));
                let scheduling = if on_first_only && position > 0 { None } else { scheduling.clone() };
                specs.push(specification(requirement, Some(shape.name.clone()), model, scheduling));
            }
            component.specifications = Some(specs);
        } else {
            let target = rng.pick(&pool);
            let requirement = requirement_for(&mut rng, &target, config, oversized, large_copies);
            for shape in &all {
                need.push((shape.name.clone(), need_of(requirement)));
            }
            let model = (config.model_names && rng.chance(50)).then(|| format!("{name}-model"));
            component.specification = Some(specification(requirement, None, model, scheduling));
        }
        needs.push(need);
        components.push(component);
    }

    // Existing instances, with copies added only where they are eligible and fit.
    let mut running = vec![0u32; components.len()];
    for (position, shape) in fleet_shapes.iter().enumerate() {
        let id =
            if realistic { format!("i-{:04x}", rng.below(0xffff) * 16 + position) } else { format!("i-{position:02}") };
        scenario.fleet.instances.push(FleetInstance {
            instance_id: id.clone(),
            instance_type: shape.name.clone(),
            availability_zone: rng.pick(&azs),
            reserved: rng.chance(config.reserved_percent),
            state: rng.chance(config.draining_percent).then_some(fleetplan::InstanceState::Draining),
        });
        if single_model || components.is_empty() || rng.chance(15) {
            continue; // idle (a single-model endpoint's instances run one implicit copy each)
        }
        let capacity = (u64::from(shape.accelerators), u64::from(shape.vcpus) * 1000, u64::from(shape.memory_mib));
        let mut used = (0u64, 0u64, 0u64);
        for _ in 0..rng.range(config.fleet_copies.0, config.fleet_copies.1) {
            let c = rng.below(components.len());
            let Some(&(_, (accelerators, milli_cpus, memory))) = needs[c].iter().find(|(name, _)| *name == shape.name)
            else {
                continue; // not eligible on this type
            };
            let count = rng.range(1, 2);
            let after = (
                used.0 + accelerators * u64::from(count),
                used.1 + milli_cpus * u64::from(count),
                used.2 + memory * u64::from(count),
            );
            if after.0 <= capacity.0 && after.1 <= capacity.1 && after.2 <= capacity.2 {
                used = after;
                running[c] += count;
                scenario.fleet.copies.push(FleetCopy {
                    inference_component_name: components[c].inference_component_name.clone(),
                    instance_id: id.clone(),
                    copy_count: count,
                });
            }
        }
    }
    for (component, &running) in components.iter_mut().zip(&running) {
        if config.copies_follow_fleet {
            component.runtime_config.copy_count = running;
        } else if running > 0 && rng.chance(config.scale_in_percent) {
            component.runtime_config.copy_count = rng.range(0, running - 1);
        }
    }
    scenario.inference_components = components;

    if single_model {
        scenario.endpoint.model_name = Some("single-model".into());
        scenario.endpoint.desired_instance_count = Some(rng.range(0, 10));
        if !scenario.fleet.instances.is_empty() && rng.chance(30) {
            // Explicit copies on some instances instead of "every instance runs one".
            let ids: Vec<String> = scenario.fleet.instances.iter().map(|i| i.instance_id.clone()).collect();
            for id in ids {
                if rng.chance(60) {
                    scenario.fleet.copies.push(FleetCopy {
                        inference_component_name: scenario.endpoint.variant_name.clone(),
                        instance_id: id,
                        copy_count: 1,
                    });
                }
            }
        }
    }

    scenario.endpoint.managed_instance_scaling = scaling(&mut rng, config, &scenario);
    if config.binding_max_percent > 0 && rng.chance(config.binding_max_percent) {
        let bound = instances_needed_at_best(&components_needs(&scenario, &needs), &pool);
        let scaling = scenario.endpoint.managed_instance_scaling.get_or_insert_with(|| ManagedInstanceScaling {
            status: Some(fleetplan::ScalingStatus::Enabled),
            ..Default::default()
        });
        let max = rng.range((bound * 7).div_ceil(10).max(1), (bound * 13).div_ceil(10).max(1));
        scaling.max_instance_count = Some(max);
        scaling.min_instance_count = scaling.min_instance_count.map(|min| min.min(max));
    }

    if config.events > 0 {
        let count = rng.range(0, config.events);
        let kinds = fleetplan::CapacityEventKind::ALL;
        scenario.capacity_events = (0..count)
            .map(|_| CapacityEvent {
                instance_type: rng.pick(&pool).name,
                availability_zone: rng.pick(&azs),
                event: rng.pick(kinds),
                time: i64::from(rng.range(0, 1_000)),
            })
            .collect();
        scenario.now = Some(i64::from(rng.range(1_000, 1_400)));
        scenario.capacity_error_ttl_seconds = rng.pick(&[None, Some(0), Some(60), Some(600)]);
    }
    scenario
}

/// Per component: its CopyCount and its need per pool type it may use.
fn components_needs<'a>(scenario: &Scenario, needs: &'a [Vec<(String, Need)>]) -> Vec<(u32, &'a [(String, Need)])> {
    scenario
        .inference_components
        .iter()
        .zip(needs)
        .map(|(c, need)| (c.runtime_config.copy_count, need.as_slice()))
        .collect()
}

/// Instances all copies need with perfect packing, each copy on the pool type where it takes the
/// smallest share of an instance (a fractional lower bound, rounded up); copies that fit no pool
/// type are left out.
fn instances_needed_at_best(components: &[(u32, &[(String, Need)])], pool: &[Shape]) -> u32 {
    let mut total = 0.0f64;
    for &(copies, need) in components {
        let share = pool
            .iter()
            .filter_map(|shape| {
                let &(_, (accelerators, milli_cpus, memory)) = need.iter().find(|(name, _)| *name == shape.name)?;
                let capacity =
                    [u64::from(shape.accelerators), u64::from(shape.vcpus) * 1000, u64::from(shape.memory_mib)];
                let wanted = [accelerators, milli_cpus, memory];
                if wanted.iter().zip(&capacity).any(|(w, c)| w > c) {
                    return None;
                }
                Some(
                    wanted
                        .iter()
                        .zip(&capacity)
                        .filter(|(_, &c)| c > 0)
                        .map(|(&w, &c)| w as f64 / c as f64)
                        .fold(0.0, f64::max),
                )
            })
            .fold(f64::INFINITY, f64::min);
        if share.is_finite() {
            total += f64::from(copies) * share;
        }
    }
    total.ceil() as u32
}

/// MinInstanceCount, MaxInstanceCount and the scale-in policy.
fn scaling(rng: &mut Rng, config: &Config, scenario: &Scenario) -> Option<ManagedInstanceScaling> {
    if config.realistic && rng.chance(20) {
        return None;
    }
    let fleet_len = scenario.fleet.instances.len() as u32;
    let mut min = rng.range(config.min_instances.0, config.min_instances.1);
    let max = if !rng.chance(config.max_percent) {
        None
    } else if config.realistic {
        // Copies the scenario wants, as a rough scale for a generous maximum; or one below the fleet.
        let wanted: u32 = scenario.inference_components.iter().map(|c| c.runtime_config.copy_count).sum();
        Some(match rng.below(100) {
            0..=57 => rng.range(fleet_len + wanted / 4, fleet_len + wanted.max(4)),
            58..=74 => rng.range(min.max(1), 10),
            _ if fleet_len > 1 => rng.range(0, fleet_len - 1),
            _ => rng.range(0, 3),
        })
    } else {
        Some(min + rng.range(0, 8))
    };
    if let Some(max) = max {
        min = min.min(max);
    }
    let policy = match config.step_size {
        Some((lo, hi)) => Some(ScaleInPolicySpec {
            strategy: Some(fleetplan::ScaleInStrategy::Consolidation),
            cooldown_in_minutes: None,
            maximum_step_size: Some(rng.range(lo, hi)),
        }),
        None if config.realistic && rng.chance(40) => Some(ScaleInPolicySpec {
            strategy: Some(
                rng.pick(&[fleetplan::ScaleInStrategy::IdleRelease, fleetplan::ScaleInStrategy::Consolidation]),
            ),
            cooldown_in_minutes: rng.chance(50).then(|| rng.range(5, 60)),
            maximum_step_size: rng.chance(50).then(|| rng.range(1, 4)),
        }),
        None => None,
    };
    Some(ManagedInstanceScaling {
        status: (!config.realistic || rng.chance(80)).then_some(fleetplan::ScalingStatus::Enabled),
        min_instance_count: (!config.realistic || min > 0 || rng.chance(50)).then_some(min),
        max_instance_count: max,
        scale_in_policy: policy,
    })
}

/// Scenarios of `config` for proptest: a seed and the sizes (AZs, components, fleet) are drawn,
/// so a failing case shrinks towards fewer AZs, components and instances.
pub fn scenarios(config: Config) -> impl Strategy<Value = Scenario> {
    (
        any::<u64>(),
        config.azs.0..=config.azs.1,
        config.components.0..=config.components.1,
        config.fleet.0..=config.fleet.1,
    )
        .prop_map(move |(seed, azs, components, fleet)| generate(seed, &config.sized(azs, components, fleet)))
}

/// The placement strategy of its JSON spelling.
fn placement(strategy: &str) -> fleetplan::PlacementStrategy {
    fleetplan::PlacementStrategy::parse(strategy).unwrap_or(fleetplan::PlacementStrategy::Spread)
}
