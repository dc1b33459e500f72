//! Vector bin-packing instances of the literature (VPSolver `.vbp` text format, 2 or 3
//! resources) as fleetplan scenarios, for the `vbp_run` / `vbp_convert` examples and
//! `tests/bpp_small.rs` (issue 11, vector-packing target).
//!
//! The translation keeps the optimum: one AZ, one instance type whose capacities are the bin's,
//! one BINPACK component per distinct item vector with CopyCount = its multiplicity, no fleet,
//! no balance. Resource `k` of the (possibly projected) instance maps to one fleetplan resource
//! by an exact integer scaling, so every comparison `Σ size ≤ capacity` is unchanged:
//!
//! | resource | fleetplan field | item | bin |
//! |---|---|---|---|
//! | memory | `MinMemoryRequiredInMb` / `MemoryInMb` | size × 128 MiB | capacity × 128 MiB |
//! | CPU | `NumberOfCpuCoresRequired` / `VCpuCount` | size × 0.25 cores = size × 250 milli-cores | capacity × 250 milli-cores |
//! | accelerators | devices | size | capacity (≤ 1024) |
//!
//! A component needs at least 128 MiB, so memory takes the first used resource in which no item
//! is 0 (a permutation of the resources changes no packing); the remaining resources go, in file
//! order, to CPU and then accelerators. A size 0 in CPU or accelerators means "no requirement",
//! which is the same thing. 0.25 × an integer and × 1000 are exact in `f64`, so the validator's
//! rounding (milli-cores rounded up) loses nothing.

#![allow(dead_code)] // each user (example, test) needs a different part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetplan::{InstanceTypeSpec, Scenario, ScenarioBuilder};

/// MiB per unit of a size mapped to memory.
pub const MIB_PER_UNIT: u64 = 128;

/// Milli-cores per unit of a size mapped to CPU (0.25 cores, the smallest CPU requirement).
pub const MILLI_CPUS_PER_UNIT: u64 = 250;

/// The one instance type of a converted instance: a bin.
pub const BIN_TYPE: &str = "ml.vbp.bin";

/// Where the instances and `values.tsv` live, from the crate root.
pub const DATA_DIR: &str = "benches/data/vbp";

/// The largest accelerator count an instance type may declare (the validator's limit).
const MAX_ACCELERATORS: u64 = 1024;

/// Which fleetplan resource carries each used resource of the instance, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// `MinMemoryRequiredInMb` / `MemoryInMb`.
    Memory,
    /// `NumberOfCpuCoresRequired` / `VCpuCount`.
    Cpu,
    /// `NumberOfAcceleratorDevicesRequired` / `AcceleratorCount`.
    Accelerators,
}

/// A vector bin-packing instance: one capacity per resource and item vectors with multiplicities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VbpInstance {
    /// File stem, e.g. `Panigrahy_class1_40_3_0`.
    pub name: String,
    /// Bin capacity per resource.
    pub capacities: Vec<u64>,
    /// Item types in file order: sizes (one per resource) and how many items have them.
    pub items: Vec<(Vec<u64>, u32)>,
}

impl VbpInstance {
    /// Parses the VPSolver `.vbp` format: resource count d, d capacities, item-type count m, then
    /// m lines of d sizes and a demand (whitespace separated). Errors name the problem.
    pub fn parse(name: &str, text: &str) -> Result<VbpInstance, String> {
        let numbers = text
            .split_whitespace()
            .map(|token| token.parse::<u64>().map_err(|e| format!("{name}: {token:?} is not a size: {e}")))
            .collect::<Result<Vec<u64>, String>>()?;
        let Some((&dimensions, rest)) = numbers.split_first() else {
            return Err(format!("{name}: empty file"));
        };
        let dimensions = usize::try_from(dimensions).map_err(|e| format!("{name}: {dimensions} resources: {e}"))?;
        if dimensions == 0 || rest.len() <= dimensions {
            return Err(format!("{name}: expected a resource count, that many capacities and an item-type count"));
        }
        let (capacities, rest) = rest.split_at(dimensions);
        let (&types, rows) = rest.split_first().ok_or_else(|| format!("{name}: no item-type count"))?;
        if rows.len() as u64 != types.saturating_mul(dimensions as u64 + 1) {
            return Err(format!(
                "{name}: {types} item types of {} numbers, file has {} numbers",
                dimensions + 1,
                rows.len()
            ));
        }
        let mut items = Vec::new();
        for row in rows.chunks(dimensions + 1) {
            let (sizes, demand) = row.split_at(dimensions);
            if let Some((size, capacity)) = sizes.iter().zip(capacities).find(|(size, capacity)| size > capacity) {
                return Err(format!("{name}: item size {size} above the capacity {capacity}"));
            }
            let demand = u32::try_from(demand[0]).map_err(|e| format!("{name}: demand {}: {e}", demand[0]))?;
            items.push((sizes.to_vec(), demand));
        }
        Ok(VbpInstance { name: name.into(), capacities: capacities.to_vec(), items })
    }

    /// Reads and parses a file; the name is its stem.
    pub fn read(path: &Path) -> Result<VbpInstance, String> {
        let name = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        VbpInstance::parse(&name, &text)
    }

    /// The instance restricted to its first `dimensions` resources (a relaxation in general; for
    /// the triplet classes, where every triplet fills every resource exactly, the optimum stays).
    pub fn projected(&self, dimensions: usize) -> Result<VbpInstance, String> {
        if dimensions == 0 || dimensions > self.capacities.len() {
            return Err(format!("{}: cannot keep {dimensions} of {} resources", self.name, self.capacities.len()));
        }
        Ok(VbpInstance {
            name: self.name.clone(),
            capacities: self.capacities[..dimensions].to_vec(),
            items: self.items.iter().map(|(sizes, demand)| (sizes[..dimensions].to_vec(), *demand)).collect(),
        })
    }

    /// Number of items (Σ demands).
    pub fn item_count(&self) -> u64 {
        self.items.iter().map(|(_, demand)| u64::from(*demand)).sum()
    }

    /// Distinct item vectors with their multiplicities, ascending.
    pub fn multiplicities(&self) -> BTreeMap<Vec<u64>, u32> {
        let mut counts = BTreeMap::new();
        for (sizes, demand) in &self.items {
            *counts.entry(sizes.clone()).or_insert(0) += *demand;
        }
        counts.retain(|_, count| *count > 0);
        counts
    }

    /// max over resources of ⌈Σ size / capacity⌉, the trivial lower bound.
    pub fn trivial_bound(&self) -> u64 {
        (0..self.capacities.len())
            .map(|k| {
                let total: u64 = self.items.iter().map(|(sizes, demand)| sizes[k] * u64::from(*demand)).sum();
                total.div_ceil(self.capacities[k].max(1))
            })
            .max()
            .unwrap_or(0)
    }

    /// The fleetplan resource of each resource (module docs): memory first where no item is 0.
    pub fn carriers(&self) -> Result<Vec<Carrier>, String> {
        let dimensions = self.capacities.len();
        if dimensions > 3 {
            return Err(format!("{}: {dimensions} resources, fleetplan has 3", self.name));
        }
        let memory =
            (0..dimensions)
                .find(|&k| self.items.iter().all(|(sizes, demand)| *demand == 0 || sizes[k] > 0))
                .ok_or_else(|| format!("{}: every resource has an item of size 0, none can be memory", self.name))?;
        let mut others = [Carrier::Cpu, Carrier::Accelerators].into_iter();
        Ok((0..dimensions)
            .map(|k| if k == memory { Carrier::Memory } else { others.next().unwrap_or(Carrier::Accelerators) })
            .collect())
    }

    /// The scenario whose optimal instance count is this instance's optimum (module docs).
    pub fn scenario(&self) -> Result<Scenario, String> {
        let carriers = self.carriers()?;
        let name = &self.name;
        let mib = |units: u64| {
            units
                .checked_mul(MIB_PER_UNIT)
                .and_then(|mib| u32::try_from(mib).ok())
                .ok_or_else(|| format!("{name}: {units} × {MIB_PER_UNIT} MiB too large"))
        };
        // Exact: MILLI_CPUS_PER_UNIT / 1000 = 0.25, a power of two, and the sizes are far below 2^50.
        let cores = |units: u64| units as f64 * (MILLI_CPUS_PER_UNIT as f64 / 1000.0);
        let devices = |units: u64| {
            u32::try_from(units)
                .ok()
                .filter(|&count| u64::from(count) <= MAX_ACCELERATORS)
                .ok_or_else(|| format!("{name}: {units} accelerators, at most {MAX_ACCELERATORS}"))
        };
        let mut bin = InstanceTypeSpec {
            instance_type: BIN_TYPE.into(),
            accelerator_count: 0,
            accelerator_memory_gib: 0.0,
            v_cpu_count: 0.0,
            memory_in_mb: 0.0,
            // One price per instance, so L4 agrees with L3 and no "missing price" warning.
            hourly_price: Some(1.0),
        };
        for (carrier, &capacity) in carriers.iter().zip(&self.capacities) {
            match carrier {
                Carrier::Memory => bin.memory_in_mb = f64::from(mib(capacity)?),
                Carrier::Cpu => bin.v_cpu_count = cores(capacity),
                Carrier::Accelerators => bin.accelerator_count = devices(capacity)?,
            }
        }
        let mut builder = ScenarioBuilder::new(["az-1"]).instance_type(bin).pool(BIN_TYPE, 1);
        for (sizes, copies) in self.multiplicities() {
            let (mut memory, mut cpu, mut accelerators) = (0, 0.0, 0);
            for (carrier, &size) in carriers.iter().zip(&sizes) {
                match carrier {
                    Carrier::Memory => memory = mib(size)?,
                    Carrier::Cpu => cpu = cores(size),
                    Carrier::Accelerators => accelerators = devices(size)?,
                }
            }
            let label = sizes.iter().map(|size| format!("{size:04}")).collect::<Vec<_>>().join("-");
            let component = format!("item-{label}");
            builder = builder
                .component(&component, copies, accelerators, cpu, memory)
                .strategy(&component, fleetplan::PlacementStrategy::Binpack);
        }
        builder.build().map_err(|error| error.to_string())
    }
}

/// How a value of `values.tsv` is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A proven optimum (published, or by construction).
    Optimum,
    /// The best known solution value, not proven optimal.
    BestKnown,
}

/// One row of `values.tsv`: a run (an instance file, possibly projected) and its known value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownValue {
    /// Run name: the file stem, with `@2d` when projected to the first two resources.
    pub name: String,
    /// The instance file.
    pub path: PathBuf,
    /// Resources used (the first `dimensions` of the file).
    pub dimensions: usize,
    /// Number of bins.
    pub value: u32,
    /// Optimum or best known.
    pub kind: ValueKind,
}

impl KnownValue {
    /// The instance of this run (projected when the row says so).
    pub fn instance(&self) -> Result<VbpInstance, String> {
        let mut instance = VbpInstance::read(&self.path)?.projected(self.dimensions)?;
        instance.name.clone_from(&self.name);
        Ok(instance)
    }
}

/// The stored runs with their known values, in table order (`root` is the crate root).
pub fn known_values(root: &Path) -> Result<Vec<KnownValue>, String> {
    let dir = root.join(DATA_DIR);
    let table = dir.join("values.tsv");
    let text = std::fs::read_to_string(&table).map_err(|e| format!("{}: {e}", table.display()))?;
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let [name, file, dimensions, _items, value, kind, ..] = fields.as_slice() else {
                return Err(format!("values.tsv: short line {line:?}"));
            };
            let dimensions = dimensions.parse().map_err(|e| format!("values.tsv: {name}: dims {dimensions:?}: {e}"))?;
            let value = value.parse().map_err(|e| format!("values.tsv: {name}: value {value:?}: {e}"))?;
            let kind = match *kind {
                "opt" => ValueKind::Optimum,
                "bkv" => ValueKind::BestKnown,
                other => return Err(format!("values.tsv: {name}: kind {other:?} is neither opt nor bkv")),
            };
            Ok(KnownValue { name: (*name).into(), path: dir.join(file), dimensions, value, kind })
        })
        .collect()
}

/// The family of a run name: `Panigrahy_class7_40_3_1` → `P7-3d`, `Triplet_classC_60_3_0@2d`
/// → `TC-2d`.
pub fn family(name: &str) -> String {
    let (stem, projected) = match name.strip_suffix("@2d") {
        Some(stem) => (stem, Some(2)),
        None => (name, None),
    };
    let parts: Vec<&str> = stem.split('_').collect();
    let prefix = match parts.first() {
        Some(&"Panigrahy") => "P",
        Some(&"Triplet") => "T",
        _ => "?",
    };
    let class = parts.get(1).map_or("", |class| class.trim_start_matches("class"));
    let dimensions = projected.map_or_else(|| parts.get(3).copied().unwrap_or("?").to_string(), |d| d.to_string());
    format!("{prefix}{class}-{dimensions}d")
}
