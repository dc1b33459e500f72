//! One-dimensional bin-packing instances of the literature (BPPLIB text format) as fleetplan
//! scenarios, for the `bpp_run` / `bpp_convert` examples and `tests/bpp_small.rs` (issue 11).
//!
//! The translation keeps the optimum: one AZ, one instance type whose memory is the bin
//! capacity (no accelerators, CPU unused), one BINPACK component per distinct item size with
//! CopyCount = its multiplicity, no fleet, no balance. Every copy fits an empty instance, so the
//! optimum places all copies and its instance count (L3) is the bin-packing optimum. Sizes are
//! scaled by [`MIB_PER_UNIT`] because a component needs at least 128 MiB; scaling every size and
//! the capacity by one factor changes no packing.

#![allow(dead_code)] // each user (example, test) needs a different part

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fleetplan::{InstanceTypeSpec, Scenario, ScenarioBuilder};

/// MiB per unit of item size: the smallest size (1) becomes the 128 MiB minimum of a component.
pub const MIB_PER_UNIT: u64 = 128;

/// The one instance type of a converted instance: a bin.
pub const BIN_TYPE: &str = "ml.bpp.bin";

/// Where the instances and `optima.tsv` live, from the crate root.
pub const DATA_DIR: &str = "benches/data/bpp";

/// A bin-packing instance: a capacity and item sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BppInstance {
    /// File stem, e.g. `Falkenauer_u120_00`.
    pub name: String,
    /// Bin capacity.
    pub capacity: u64,
    /// Item sizes, in file order.
    pub sizes: Vec<u64>,
}

impl BppInstance {
    /// Parses the BPPLIB format: item count, capacity, then one size per item (whitespace
    /// separated). Errors name the problem; nothing is silently dropped.
    pub fn parse(name: &str, text: &str) -> Result<BppInstance, String> {
        let numbers = text
            .split_whitespace()
            .map(|token| token.parse::<u64>().map_err(|e| format!("{name}: {token:?} is not a size: {e}")))
            .collect::<Result<Vec<u64>, String>>()?;
        let [count, capacity, sizes @ ..] = numbers.as_slice() else {
            return Err(format!("{name}: expected item count and capacity"));
        };
        if usize::try_from(*count).ok() != Some(sizes.len()) {
            return Err(format!("{name}: header says {count} items, file has {}", sizes.len()));
        }
        if let Some(size) = sizes.iter().find(|&&size| size == 0 || size > *capacity) {
            return Err(format!("{name}: item size {size} outside 1..={capacity}"));
        }
        Ok(BppInstance { name: name.into(), capacity: *capacity, sizes: sizes.to_vec() })
    }

    /// Reads and parses a file; the name is its stem.
    pub fn read(path: &Path) -> Result<BppInstance, String> {
        let name = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        BppInstance::parse(&name, &text)
    }

    /// Distinct sizes with their multiplicities, ascending.
    pub fn multiplicities(&self) -> BTreeMap<u64, u32> {
        let mut counts = BTreeMap::new();
        for &size in &self.sizes {
            *counts.entry(size).or_insert(0) += 1;
        }
        counts
    }

    /// ⌈Σ size / capacity⌉, the trivial lower bound.
    pub fn trivial_bound(&self) -> u64 {
        self.sizes.iter().sum::<u64>().div_ceil(self.capacity)
    }

    /// The scenario whose optimal instance count is this instance's optimum (module docs).
    pub fn scenario(&self) -> Result<Scenario, String> {
        let mib = |units: u64| {
            units
                .checked_mul(MIB_PER_UNIT)
                .and_then(|mib| u32::try_from(mib).ok())
                .ok_or_else(|| format!("{}: {units} × {MIB_PER_UNIT} MiB too large", self.name))
        };
        let mut builder = ScenarioBuilder::new(["az-1"])
            .instance_type(InstanceTypeSpec {
                instance_type: BIN_TYPE.into(),
                accelerator_count: 0,
                accelerator_memory_gib: 0.0,
                // CPU never binds: components require none.
                v_cpu_count: 1024.0,
                memory_in_mb: f64::from(mib(self.capacity)?),
                // One price per instance, so L4 agrees with L3 and no "missing price" warning.
                hourly_price: Some(1.0),
            })
            .pool(BIN_TYPE, 1);
        for (size, copies) in self.multiplicities() {
            let name = format!("size-{size:05}");
            builder = builder
                .component(&name, copies, 0, 0.0, mib(size)?)
                .strategy(&name, fleetplan::PlacementStrategy::Binpack);
        }
        builder.build().map_err(|error| error.to_string())
    }
}

/// One row of `optima.tsv`: an instance file and its proven optimum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownOptimum {
    /// File stem.
    pub name: String,
    /// Proven optimal number of bins.
    pub optimum: u32,
    /// The instance file.
    pub path: PathBuf,
}

/// The stored instances with their optima, in file order (`root` is the crate root).
pub fn known_optima(root: &Path) -> Result<Vec<KnownOptimum>, String> {
    let dir = root.join(DATA_DIR);
    let table = dir.join("optima.tsv");
    let text = std::fs::read_to_string(&table).map_err(|e| format!("{}: {e}", table.display()))?;
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let [name, _items, _capacity, optimum, ..] = fields.as_slice() else {
                return Err(format!("optima.tsv: short line {line:?}"));
            };
            let optimum = optimum.parse().map_err(|e| format!("optima.tsv: {name}: optimum {optimum:?}: {e}"))?;
            Ok(KnownOptimum { name: (*name).into(), optimum, path: dir.join(format!("{name}.txt")) })
        })
        .collect()
}

/// The family of an instance name: `Falkenauer_u120_03` → `u120`; Scholl's class names are six
/// characters, `Scholl_N1C1W1_A` → `N1C1W1`, `Scholl_N1W1B1R0` → `N1W1B1`.
pub fn family(name: &str) -> &str {
    let second = name.split('_').nth(1).unwrap_or(name);
    if name.starts_with("Scholl_") {
        second.get(..6).unwrap_or(second)
    } else {
        second
    }
}
