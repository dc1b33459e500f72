//! The validated, indexed problem every engine works on.
//!
//! [`Problem::new`] checks a [`Scenario`](crate::model::Scenario) against the contract and turns names into indices and
//! decimal resources into integers (accelerator devices, milli-cores, MiB). Engines never see
//! strings they have to look up or numbers they have to re-check.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalogue::builtin_instance_types;
use crate::error::{Issue, IssueKind, ValidationError, Warning, WarningKind};
use crate::index::{AzIndex, TypeIndex};
use crate::model;
pub use crate::model::{CapacityEventKind, PlacementStrategy, ScaleInStrategy};
use crate::raw::*;

// Size limits (docs/contract.md §1.4). Within them every command returns within its
// `--time-limit-ms` plus a small constant (about a second on a 2-core machine, measured in
// docs/benchmarks.md): the work that always runs (reading, validation, greedy's first pass,
// verification) grows with components × instances, so these bound it.

/// Largest copy count per component accepted.
pub const MAX_COPIES_PER_COMPONENT: u32 = 100_000;
/// Largest sum of `CopyCount` over all components (for a single-model endpoint,
/// `DesiredInstanceCount`).
pub const MAX_TOTAL_COPIES: u64 = 100_000;
/// Largest number of inference components.
pub const MAX_COMPONENTS: usize = 2_000;
/// Largest number of availability zones.
pub const MAX_AVAILABILITY_ZONES: usize = 1_000;
/// Largest number of entries in `InstanceTypes`.
pub const MAX_INSTANCE_TYPES: usize = 1_000;
/// Largest number of instances in `Fleet.Instances`.
pub const MAX_FLEET_INSTANCES: usize = 100_000;
/// Largest number of entries in `Fleet.Copies`.
pub const MAX_FLEET_COPY_ENTRIES: usize = 200_000;
/// Largest number of entries in `Capacity` (one per (type, AZ) is all that can be meant).
pub const MAX_CAPACITY_ENTRIES: usize = 100_000;
/// Largest number of entries in `CapacityEvents`: only the latest event per (type, AZ) within
/// `CapacityErrorTtlSeconds` matters, so a caller never needs to send more.
pub const MAX_CAPACITY_EVENTS: usize = 10_000;
/// Most entries in `Endpoint.InstancePools`.
pub const MAX_INSTANCE_POOLS: usize = 5;
/// Most entries in an inference component's `Specifications`.
pub const MAX_SPECIFICATIONS: usize = 5;
/// Largest `MinInstanceCount` or `DesiredInstanceCount`: instances the plan must launch.
pub const MAX_PLANNED_INSTANCES: u32 = 100_000;
/// Largest instance count accepted where it only limits (`MaxInstanceCount`, capacity).
pub const MAX_INSTANCES: u32 = 1_000_000;

/// Integer resources of an instance or of one copy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resources {
    /// Accelerator devices.
    pub accelerators: u64,
    /// CPU in milli-cores.
    pub milli_cpus: u64,
    /// Host memory in MiB.
    pub memory_mib: u64,
}

impl Resources {
    /// Nothing.
    pub const ZERO: Resources = Resources { accelerators: 0, milli_cpus: 0, memory_mib: 0 };

    /// True when `self` fits inside `room` in every resource.
    pub fn fits_in(&self, room: &Resources) -> bool {
        self.accelerators <= room.accelerators
            && self.milli_cpus <= room.milli_cpus
            && self.memory_mib <= room.memory_mib
    }

    /// Component-wise sum (saturating).
    pub fn plus(&self, other: &Resources) -> Resources {
        Resources {
            accelerators: self.accelerators.saturating_add(other.accelerators),
            milli_cpus: self.milli_cpus.saturating_add(other.milli_cpus),
            memory_mib: self.memory_mib.saturating_add(other.memory_mib),
        }
    }

    /// `count` times `self` (saturating).
    pub fn times(&self, count: u64) -> Resources {
        Resources {
            accelerators: self.accelerators.saturating_mul(count),
            milli_cpus: self.milli_cpus.saturating_mul(count),
            memory_mib: self.memory_mib.saturating_mul(count),
        }
    }

    /// Component-wise difference, `None` if any would be negative.
    pub fn minus(&self, other: &Resources) -> Option<Resources> {
        Some(Resources {
            accelerators: self.accelerators.checked_sub(other.accelerators)?,
            milli_cpus: self.milli_cpus.checked_sub(other.milli_cpus)?,
            memory_mib: self.memory_mib.checked_sub(other.memory_mib)?,
        })
    }

    /// `copies need A accelerators, C milli-cores, M MiB; it has …`: `self` used against `capacity`.
    pub fn overbooking_text(&self, capacity: &Resources) -> String {
        format!(
            "copies need {} accelerators, {} milli-cores, {} MiB; it has {}, {}, {}",
            self.accelerators,
            self.milli_cpus,
            self.memory_mib,
            capacity.accelerators,
            capacity.milli_cpus,
            capacity.memory_mib
        )
    }

    /// Share of `capacity` that `self` takes: the largest ratio over the resources (0 for a
    /// resource `self` does not need, infinite for one `capacity` lacks).
    pub fn dominant_share(&self, capacity: &Resources) -> f64 {
        let ratio = |want: u64, have: u64| {
            if want == 0 {
                0.0
            } else if have == 0 {
                f64::INFINITY
            } else {
                want as f64 / have as f64
            }
        };
        ratio(self.accelerators, capacity.accelerators)
            .max(ratio(self.milli_cpus, capacity.milli_cpus))
            .max(ratio(self.memory_mib, capacity.memory_mib))
    }

    /// How many copies of `need` fit into `self` (`u64::MAX` if `need` is zero).
    pub fn copies_of(&self, need: &Resources) -> u64 {
        let per = |have: u64, want: u64| have.checked_div(want).unwrap_or(u64::MAX);
        per(self.accelerators, need.accelerators)
            .min(per(self.milli_cpus, need.milli_cpus))
            .min(per(self.memory_mib, need.memory_mib))
    }
}

/// Managed scaling settings after validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalingLimits {
    /// Minimum instance count.
    pub min_instances: u32,
    /// Maximum instance count (`None` = unlimited).
    pub max_instances: Option<u32>,
    /// Scale-in strategy.
    pub strategy: ScaleInStrategy,
    /// Most instances released per consolidation step.
    pub maximum_step_size: u32,
    /// Cooldown between scale-in steps, minutes.
    pub cooldown_minutes: u32,
}

/// An instance type as the problem sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceTypeInfo {
    /// Name.
    pub name: String,
    /// What one instance offers.
    pub capacity: Resources,
    /// Accelerator memory per device, GiB (informational).
    pub accelerator_memory_gib: f64,
    /// Hourly price, if known.
    pub hourly_price: Option<f64>,
    /// Priority 1–5 for pool types, 6 for types only present in the fleet.
    pub priority: u8,
    /// Whether the type is in `Endpoint.InstancePools` (new copies and launches only go there).
    pub in_pool: bool,
    /// `ModelNameOverride` of the pool entry.
    pub model_name_override: Option<String>,
}

/// What one copy of a component needs on one instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Resources per copy.
    pub resources: Resources,
    /// Model build that runs on this type (the one fleetplan's plans name).
    pub model_name: Option<String>,
    /// The other build the input names for this type, when the pool's `ModelNameOverride` and
    /// the specification's `ModelName` differ. The contract does not say which wins, so a plan
    /// from another solver may run either; `verify` accepts both.
    pub other_model_name: Option<String>,
}

impl Requirement {
    /// A requirement whose build is `first` if given, else `second`; the one not chosen is kept
    /// as [`other_model_name`](Self::other_model_name).
    fn with_builds(resources: Resources, first: Option<String>, second: Option<String>) -> Requirement {
        let other = if first.is_some() && second != first { second.clone() } else { None };
        Requirement { resources, model_name: first.or(second), other_model_name: other }
    }
}

/// A validated component.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Name (`InferenceComponentName`, or the variant name for a single-model endpoint).
    pub name: String,
    /// Desired copies.
    pub copy_count: u32,
    /// Requirement per instance type index; `None` where the component cannot run.
    pub requirements: Vec<Option<Requirement>>,
    /// Placement strategy.
    pub strategy: PlacementStrategy,
    /// `MaxImbalance` when the component has `AvailabilityZoneBalance`.
    pub max_imbalance: Option<u32>,
}

impl Component {
    /// The requirement on `type_index` if new copies may be placed there (pool type, allowed).
    pub fn placement_requirement<'a>(&'a self, problem: &Problem, type_index: usize) -> Option<&'a Requirement> {
        if problem.types.get(type_index)?.in_pool {
            self.requirements.get(type_index)?.as_ref()
        } else {
            None
        }
    }
}

/// Launch limits of one (type, AZ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaunchLimit {
    /// Unused reservation slots (launched first, cost nothing).
    pub reserved: u32,
    /// Further on-demand launches; `None` = unlimited.
    pub available: Option<u32>,
}

impl LaunchLimit {
    /// Total launches allowed (`None` = unlimited).
    pub fn total(&self) -> Option<u32> {
        self.available.map(|available| available.saturating_add(self.reserved))
    }
}

/// Largest magnitude accepted for `Now` and event times, in seconds (exact in an `f64`).
pub const MAX_TIME_SECONDS: i64 = 1_000_000_000_000_000;
/// Largest `CapacityErrorTtlSeconds` accepted (one day).
pub const MAX_CAPACITY_ERROR_TTL_SECONDS: u32 = 86_400;
/// `CapacityErrorTtlSeconds` when none is given.
pub const DEFAULT_CAPACITY_ERROR_TTL_SECONDS: u32 = 180;

/// A live capacity error that keeps a (type, AZ) from launching in this plan (contract §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityBlock {
    /// The blocking event (`InsufficientCapacity` or `ProvisioningTimeout`).
    pub event: CapacityEventKind,
    /// When it happened (caller's clock, seconds).
    pub time: i64,
    /// When it stops blocking: `time + CapacityErrorTtlSeconds`.
    pub until: i64,
}

/// A running instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingInstance {
    /// Instance id.
    pub id: String,
    /// Index into [`Problem::instance_types`].
    pub type_index: usize,
    /// Index into [`Problem::azs`].
    pub az_index: usize,
    /// Runs in a reservation (costs nothing).
    pub reserved: bool,
    /// Copies running on it: (component index, count), sorted by component.
    pub copies: Vec<(usize, u32)>,
    /// `State: Draining` (docs/contract.md §6): the operator wants it gone. It receives no new copy;
    /// `plan` keeps its copies, `consolidate` and `rebalance` empty and release it first.
    pub draining: bool,
}

/// A validated, indexed planning problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub(crate) endpoint_name: String,
    pub(crate) variant_name: String,
    pub(crate) azs: Vec<String>,
    pub(crate) types: Vec<InstanceTypeInfo>,
    pub(crate) components: Vec<Component>,
    /// `[type][az]`.
    pub(crate) limits: Vec<Vec<LaunchLimit>>,
    pub(crate) fleet: Vec<ExistingInstance>,
    /// Fleet instance id → index in `fleet` (ids are unique once validated).
    pub(crate) fleet_by_id: BTreeMap<String, usize>,
    /// Component name → index in `components` (names are unique once validated).
    pub(crate) component_by_name: BTreeMap<String, usize>,
    pub(crate) scaling: ScalingLimits,
    pub(crate) single_model: bool,
    pub(crate) warnings: Vec<Warning>,
    /// `Now` of the scenario, when given.
    pub(crate) now: Option<i64>,
    /// Live capacity errors per (type, AZ); their launch limits are zero in `limits`.
    pub(crate) capacity_blocks: BTreeMap<(TypeIndex, AzIndex), CapacityBlock>,
}

impl Problem {
    /// Validates a scenario. Every problem is reported at once. A scenario built in code
    /// (e.g. by [`ScenarioBuilder`](crate::model::ScenarioBuilder)) is held to exactly the rules JSON input is.
    pub fn new(scenario: &model::Scenario) -> Result<Problem, ValidationError> {
        Validator::default().run(&Scenario::from(scenario))
    }

    /// Endpoint name.
    pub fn endpoint_name(&self) -> &str {
        &self.endpoint_name
    }
    /// Variant name.
    pub fn variant_name(&self) -> &str {
        &self.variant_name
    }
    /// Availability zones, in input order.
    pub fn azs(&self) -> &[String] {
        &self.azs
    }
    /// Instance types: pool types first (input order), then fleet-only types (priority 6).
    pub fn instance_types(&self) -> &[InstanceTypeInfo] {
        &self.types
    }
    /// Components in input order.
    pub fn components(&self) -> &[Component] {
        &self.components
    }
    /// Launch limit of (type, AZ).
    pub fn launch_limit(&self, type_index: TypeIndex, az_index: AzIndex) -> LaunchLimit {
        self.limits.get(type_index.index()).and_then(|row| row.get(az_index.index())).copied().unwrap_or_default()
    }
    /// The live capacity error that blocks launches of (type, AZ) in this plan, if any
    /// (contract §6). [`Self::launch_limit`] is already zero there.
    pub fn capacity_block(&self, type_index: TypeIndex, az_index: AzIndex) -> Option<&CapacityBlock> {
        self.capacity_blocks.get(&(type_index, az_index))
    }
    /// Every live capacity block, by (type index, AZ index).
    pub fn capacity_blocks(&self) -> &BTreeMap<(TypeIndex, AzIndex), CapacityBlock> {
        &self.capacity_blocks
    }
    /// `Now` of the scenario (the caller's clock), when given.
    pub fn now(&self) -> Option<i64> {
        self.now
    }
    /// The running fleet.
    pub fn fleet(&self) -> &[ExistingInstance] {
        &self.fleet
    }
    /// Scaling limits and scale-in policy.
    pub fn scaling(&self) -> &ScalingLimits {
        &self.scaling
    }
    /// True for a single-model (or asynchronous) endpoint planned as one implicit component.
    pub fn is_single_model(&self) -> bool {
        self.single_model
    }
    /// Warnings found during validation.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
    /// Index of a component by name.
    pub fn component_index(&self, name: &str) -> Option<usize> {
        self.component_by_name.get(name).copied()
    }
    /// Index of a type by name.
    pub fn type_index(&self, name: &str) -> Option<usize> {
        self.types.iter().position(|info| info.name == name)
    }
    /// Index of an AZ by name.
    pub fn az_index(&self, name: &str) -> Option<usize> {
        self.azs.iter().position(|az| az == name)
    }
    /// Index of an existing instance by id.
    pub fn existing_index(&self, id: &str) -> Option<usize> {
        self.fleet_by_id.get(id).copied()
    }
    /// Indices of pool types.
    pub fn pool_types(&self) -> impl Iterator<Item = usize> + '_ {
        self.types.iter().enumerate().filter(|(_, info)| info.in_pool).map(|(index, _)| index)
    }
    /// Resources that `copies` (component index → count) use on an instance of `type_index`,
    /// each copy measured with that type's requirement (a copy with none counts as nothing).
    pub fn copies_footprint(&self, type_index: usize, copies: &BTreeMap<usize, u32>) -> Resources {
        copies.iter().fold(Resources::ZERO, |used, (&component, &count)| {
            match self.components.get(component).and_then(|c| c.requirements.get(type_index)) {
                Some(Some(requirement)) => used.plus(&requirement.resources.times(u64::from(count))),
                _ => used,
            }
        })
    }

    /// Existing copies of each component (index = component).
    pub fn existing_copies_per_component(&self) -> Vec<u64> {
        let mut counts = vec![0u64; self.components.len()];
        for instance in &self.fleet {
            for &(component, count) in &instance.copies {
                counts[component] += u64::from(count);
            }
        }
        counts
    }

    /// The same endpoint without a fleet, planning the copies that run now: each component's
    /// `CopyCount` is its running copies, and each pool instance that `counts` (a reserved one as a
    /// reservation slot) raises its (type, AZ)'s capacity by one, so that every fleet the running
    /// instances and launches can form is a plan of it. The one place a `Problem` is edited this
    /// way: the fleet and its id index change together.
    pub(crate) fn running_copies_without_fleet(&self, counts: impl Fn(&ExistingInstance) -> bool) -> Problem {
        let mut empty = self.clone();
        for (component, running) in empty.components.iter_mut().zip(self.existing_copies_per_component()) {
            component.copy_count = u32::try_from(running).unwrap_or(u32::MAX);
        }
        for instance in self.fleet.iter().filter(|instance| counts(instance)) {
            let in_pool = self.types.get(instance.type_index).is_some_and(|info| info.in_pool);
            let Some(limit) = empty.limits.get_mut(instance.type_index).and_then(|row| row.get_mut(instance.az_index))
            else {
                continue;
            };
            if !in_pool {
                continue;
            }
            *limit = if instance.reserved {
                LaunchLimit { reserved: limit.reserved.saturating_add(1), available: limit.available }
            } else {
                LaunchLimit {
                    reserved: limit.reserved,
                    available: limit.available.map(|count| count.saturating_add(1)),
                }
            };
        }
        empty.fleet.clear();
        empty.fleet_by_id.clear();
        empty
    }
}

#[derive(Default)]
pub(crate) struct Validator {
    issues: Vec<Issue>,
    warnings: Vec<Warning>,
    /// Numbers as written in the JSON input, by path, where the parsed value prints otherwise
    /// (a big integer, `1e3`): messages echo what the user wrote.
    raw_numbers: BTreeMap<String, String>,
}

/// A name for a message: quoted and escaped (control characters cannot break a line) and cut
/// to 60 characters, so one long name cannot flood the output.
pub(crate) fn quoted(name: &str) -> String {
    if name.chars().count() > 60 {
        let cut: String = name.chars().take(57).collect();
        format!("{cut:?}...")
    } else {
        format!("{name:?}")
    }
}

/// `message` about the entry at `path`, naming it when the path only indexes it: paths stay
/// JSON paths (`InferenceComponents[3].RuntimeConfig.CopyCount`), and a message about a
/// component, fleet instance or fleet copy entry ends with its name (`(component "llm-7b")`)
/// unless it already says it.
pub(crate) fn with_entry_name(scenario: &Scenario, path: &str, message: &str) -> String {
    match entry_name(scenario, path) {
        Some((name, bare)) if !bare.is_empty() && !mentions(message, &bare) => format!("{message} ({name})"),
        _ => message.to_string(),
    }
}

/// Whether `message` names `name` as a whole word (`m` is not mentioned by "number").
fn mentions(message: &str, name: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
    message.match_indices(name).any(|(start, _)| {
        let before = message[..start].chars().next_back();
        let after = message[start + name.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

/// The entry a path starts in, as (`component "llm"`, `llm`).
fn entry_name(scenario: &Scenario, path: &str) -> Option<(String, String)> {
    let index_after = |prefix: &str| -> Option<usize> {
        let rest = path.strip_prefix(prefix)?;
        rest.get(..rest.find(']')?)?.parse().ok()
    };
    if let Some(index) = index_after("InferenceComponents[") {
        let name = &scenario.inference_components.get(index)?.inference_component_name;
        Some((format!("component {}", quoted(name)), name.clone()))
    } else if let Some(index) = index_after("Fleet.Instances[") {
        let id = &scenario.fleet.instances.get(index)?.instance_id;
        Some((format!("instance {}", quoted(id)), id.clone()))
    } else if let Some(index) = index_after("Fleet.Copies[") {
        let copy = scenario.fleet.copies.get(index)?;
        let name = format!("copies of {} on {}", quoted(&copy.inference_component_name), quoted(&copy.instance_id));
        Some((name, copy.inference_component_name.clone()))
    } else {
        None
    }
}

/// A number for a message: plain decimals for ordinary magnitudes, exponent form for huge or
/// tiny ones (`1e300`, not three hundred digits).
pub(crate) fn number_text(value: f64) -> String {
    let magnitude = value.abs();
    if value.is_finite() && value != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// The lists whose size is limited up front (docs/contract.md §1.4): (path, length, limit).
/// `Endpoint.InstancePools` and `Specifications` have their own, smaller limits, reported with
/// the other checks of their entries.
fn list_sizes(scenario: &Scenario) -> [(&'static str, usize, usize); 7] {
    [
        ("AvailabilityZones", scenario.availability_zones.len(), MAX_AVAILABILITY_ZONES),
        ("InstanceTypes", scenario.instance_types.len(), MAX_INSTANCE_TYPES),
        ("Capacity", scenario.capacity.len(), MAX_CAPACITY_ENTRIES),
        ("InferenceComponents", scenario.inference_components.len(), MAX_COMPONENTS),
        ("Fleet.Instances", scenario.fleet.instances.len(), MAX_FLEET_INSTANCES),
        ("Fleet.Copies", scenario.fleet.copies.len(), MAX_FLEET_COPY_ENTRIES),
        ("CapacityEvents", scenario.capacity_events.len(), MAX_CAPACITY_EVENTS),
    ]
}

/// The size limit of the list at a JSON path, for lists limited up front (see [`list_sizes`]),
/// with the list's place in the order they are reported.
#[cfg(feature = "json")]
pub(crate) fn list_limit(path: &str) -> Option<(usize, usize)> {
    list_sizes(&Scenario::default())
        .into_iter()
        .enumerate()
        .find(|(_, (list, _, _))| *list == path)
        .map(|(order, (_, _, limit))| (order, limit))
}

/// Whether a number must be whole.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Integer,
    Decimal,
}

/// The instance type catalogue: name → (spec, path of the scenario entry, empty for a built-in).
type Catalogue = BTreeMap<String, (InstanceTypeSpec, String)>;

/// An instance pool: (type, priority, model name override).
type Pool = (String, u8, Option<String>);

/// What the capacity section finds.
struct LaunchCapacity {
    /// Launch limits per (type, AZ).
    limits: Vec<Vec<LaunchLimit>>,
    /// Per (type, AZ): whether a `Capacity` entry limits it.
    limited: Vec<Vec<bool>>,
}

/// What the components section finds.
struct Components {
    components: Vec<Component>,
    /// No inference components: the endpoint's own model is the one component.
    single_model: bool,
    variant_name: String,
}

/// `Fleet.Instances` as validated.
struct ListedFleet {
    /// Instances with a known type and AZ.
    fleet: Vec<ExistingInstance>,
    /// Every instance id listed.
    ids: BTreeSet<String>,
    /// Instances whose copies are not fully known: their packing is not checked.
    untrusted: BTreeSet<String>,
}

/// Index by name, the first entry winning for a name listed twice.
fn index_by_name<'a>(names: impl IntoIterator<Item = &'a String>) -> BTreeMap<&'a str, usize> {
    let names: Vec<&str> = names.into_iter().map(String::as_str).collect();
    names.iter().enumerate().rev().map(|(index, name)| (*name, index)).collect()
}

impl Validator {
    fn error(&mut self, kind: IssueKind, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue::new(kind, path, message));
    }

    fn warn(&mut self, kind: WarningKind, path: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Warning { kind, path: path.into(), message: message.into() });
    }

    /// A validator that echoes the given numbers as written (see [`crate::json`]).
    #[cfg(feature = "json")]
    pub(crate) fn with_raw_numbers(raw_numbers: BTreeMap<String, String>) -> Self {
        Validator { raw_numbers, ..Validator::default() }
    }

    /// `value` at `path` for a message: as written in the input when known.
    fn shown(&self, path: &str, value: f64) -> String {
        self.raw_numbers.get(path).cloned().unwrap_or_else(|| number_text(value))
    }

    /// Checks a number is finite, within `[min, max]`, and whole if asked; returns it if valid.
    fn number(&mut self, path: &str, value: f64, kind: Kind, min: f64, max: f64) -> Option<f64> {
        let shown = self.shown(path, value);
        let (min_text, max_text) = (number_text(min), number_text(max));
        if !value.is_finite() {
            self.error(IssueKind::OutOfRange, path, format!("{shown} is not a number"));
            None
        } else if kind == Kind::Integer && value.fract() != 0.0 {
            self.error(IssueKind::NotAWholeNumber, path, format!("expected an integer, found {shown}"));
            None
        } else if value < min {
            self.error(IssueKind::OutOfRange, path, format!("{shown} is below the minimum {min_text}"));
            None
        } else if value > max {
            self.error(IssueKind::OutOfRange, path, format!("{shown} is above the maximum {max_text}"));
            None
        } else {
            Some(value)
        }
    }

    fn count(&mut self, path: &str, value: f64, min: u32, max: u32) -> Option<u32> {
        self.number(path, value, Kind::Integer, f64::from(min), f64::from(max)).map(|v| v as u32)
    }

    pub(crate) fn run(mut self, scenario: &Scenario) -> Result<Problem, ValidationError> {
        self.sizes(scenario);
        if !self.issues.is_empty() {
            return Err(ValidationError::new(self.issues));
        }
        let azs = self.availability_zones(scenario);
        let catalogue = self.catalogue(scenario);
        let pools = self.pools(&scenario.endpoint, &catalogue);
        let types = self.problem_types(scenario, &catalogue, &pools);
        let LaunchCapacity { mut limits, limited } = self.capacity(scenario, &catalogue, &types, &azs);
        let scaling = self.scaling(&scenario.endpoint);
        let Components { components, single_model, variant_name } = self.components(scenario, &types, azs.len());
        let fleet = self.fleet(scenario, &types, &components, &azs, single_model);
        self.warn_azs_without_capacity(&azs, &types, &limits, &limited);

        // Capacity feedback (contract §6), after the warnings above: those are about `Capacity`.
        let (now, capacity_blocks) = self.capacity_events(scenario, &catalogue, &types, &azs);
        for &(t, z) in capacity_blocks.keys() {
            if let Some(limit) = limits.get_mut(t.index()).and_then(|row| row.get_mut(z.index())) {
                *limit = LaunchLimit { reserved: 0, available: Some(0) };
            }
        }

        for issue in &mut self.issues {
            issue.message = with_entry_name(scenario, &issue.path, &issue.message);
        }
        for warning in &mut self.warnings {
            warning.message = with_entry_name(scenario, &warning.path, &warning.message);
        }
        if !self.issues.is_empty() {
            return Err(ValidationError::new(self.issues));
        }
        let fleet_by_id = fleet.iter().enumerate().map(|(index, instance)| (instance.id.clone(), index)).collect();
        let component_by_name =
            components.iter().enumerate().map(|(index, component)| (component.name.clone(), index)).collect();
        Ok(Problem {
            endpoint_name: scenario.endpoint.endpoint_name.clone(),
            variant_name,
            azs,
            types,
            components,
            limits,
            fleet,
            fleet_by_id,
            component_by_name,
            scaling,
            single_model,
            warnings: self.warnings,
            now,
            capacity_blocks,
        })
    }

    /// Sizes first: beyond them the rest of validation alone could take minutes, so an
    /// oversized list is reported (with every other oversized list) and nothing else.
    fn sizes(&mut self, scenario: &Scenario) {
        let sizes = list_sizes(scenario);
        for (path, length, limit) in sizes {
            if length > limit {
                self.error(
                    IssueKind::TooLarge,
                    path,
                    format!("{length} entries; at most {limit} are accepted (size limits)"),
                );
            }
        }
    }

    /// Availability zones: at least one, each named, none twice.
    fn availability_zones(&mut self, scenario: &Scenario) -> Vec<String> {
        let azs = scenario.availability_zones.clone();
        if azs.is_empty() {
            self.error(IssueKind::Empty, "AvailabilityZones", "at least one availability zone is required");
        }
        let mut seen = BTreeSet::new();
        for (index, az) in azs.iter().enumerate() {
            if az.is_empty() {
                self.error(IssueKind::Empty, format!("AvailabilityZones[{index}]"), "empty name");
            } else if !seen.insert(az.as_str()) {
                self.error(
                    IssueKind::Duplicate,
                    format!("AvailabilityZones[{index}]"),
                    format!("{} is listed twice", quoted(az)),
                );
            }
        }
        azs
    }

    /// Catalogue: built-ins overridden by the scenario's own (valid) types.
    fn catalogue(&mut self, scenario: &Scenario) -> Catalogue {
        let mut catalogue: Catalogue = builtin_instance_types()
            .into_iter()
            .map(|spec| (spec.instance_type.clone(), (InstanceTypeSpec::from(&spec), String::new())))
            .collect();
        let mut overridden = BTreeSet::new();
        for (index, spec) in scenario.instance_types.iter().enumerate() {
            let path = format!("InstanceTypes[{index}]");
            if spec.instance_type.is_empty() {
                self.error(IssueKind::Empty, format!("{path}.InstanceType"), "empty name");
                continue;
            }
            if !overridden.insert(spec.instance_type.clone()) {
                self.error(
                    IssueKind::Duplicate,
                    format!("{path}.InstanceType"),
                    format!("{} is listed twice", quoted(&spec.instance_type)),
                );
            }
            let ok = [
                self.number(&format!("{path}.AcceleratorCount"), spec.accelerator_count, Kind::Integer, 0.0, 1024.0),
                self.number(&format!("{path}.VCpuCount"), spec.v_cpu_count, Kind::Decimal, 0.0, 1e6),
                self.number(&format!("{path}.MemoryInMb"), spec.memory_in_mb, Kind::Decimal, 0.0, 1e12),
                self.number(
                    &format!("{path}.AcceleratorMemoryGiB"),
                    spec.accelerator_memory_gib,
                    Kind::Decimal,
                    0.0,
                    1e9,
                ),
                match spec.hourly_price {
                    Some(price) => self.number(&format!("{path}.HourlyPrice"), price, Kind::Decimal, 0.0, 1e9),
                    None => Some(0.0),
                },
            ]
            .iter()
            .all(Option::is_some);
            if ok {
                catalogue.insert(spec.instance_type.clone(), (spec.clone(), path));
            }
        }
        catalogue
    }

    /// Pools: `Endpoint.InstanceType` or `Endpoint.InstancePools`, as (type, priority, model override).
    fn pools(&mut self, endpoint: &Endpoint, catalogue: &Catalogue) -> Vec<Pool> {
        let mut pools: Vec<Pool> = Vec::new();
        match (&endpoint.instance_type, endpoint.instance_pools.is_empty()) {
            (Some(_), false) => {
                self.error(
                    IssueKind::Conflict,
                    "Endpoint.InstanceType",
                    "give either InstanceType or InstancePools, not both",
                );
            }
            (None, true) => {
                self.error(
                    IssueKind::MissingField,
                    "Endpoint.InstancePools",
                    "at least one instance pool (or Endpoint.InstanceType) is required",
                );
            }
            (Some(name), true) => {
                if !catalogue.contains_key(name) {
                    self.error(
                        IssueKind::UnknownName,
                        "Endpoint.InstanceType",
                        format!("{} is not in the instance type catalogue", quoted(name)),
                    );
                } else {
                    pools.push((name.clone(), 1, None));
                }
            }
            (None, false) => {
                if endpoint.instance_pools.len() > MAX_INSTANCE_POOLS {
                    self.error(
                        IssueKind::TooLarge,
                        "Endpoint.InstancePools",
                        format!("{} pools given, at most 5 are allowed", endpoint.instance_pools.len()),
                    );
                }
                for (index, pool) in endpoint.instance_pools.iter().enumerate() {
                    let path = format!("Endpoint.InstancePools[{index}]");
                    let priority = self.count(&format!("{path}.Priority"), pool.priority, 1, 5);
                    let mut ok = priority.is_some();
                    if !catalogue.contains_key(&pool.instance_type) {
                        self.error(
                            IssueKind::UnknownName,
                            format!("{path}.InstanceType"),
                            format!("{} is not in the instance type catalogue", quoted(&pool.instance_type)),
                        );
                        ok = false;
                    } else if pools.iter().any(|(name, _, _)| name == &pool.instance_type) {
                        self.error(
                            IssueKind::Duplicate,
                            format!("{path}.InstanceType"),
                            format!("{} is listed twice", quoted(&pool.instance_type)),
                        );
                        ok = false;
                    }
                    if let (true, Some(priority)) = (ok, priority) {
                        pools.push((pool.instance_type.clone(), priority as u8, pool.model_name_override.clone()));
                    }
                }
            }
        }
        pools
    }

    /// Types of the problem: pool types, then fleet-only types.
    fn problem_types(&mut self, scenario: &Scenario, catalogue: &Catalogue, pools: &[Pool]) -> Vec<InstanceTypeInfo> {
        let mut types: Vec<InstanceTypeInfo> = Vec::new();
        let info = |name: &str, priority: u8, in_pool: bool, model: Option<String>| {
            catalogue.get(name).map(|(spec, _)| InstanceTypeInfo {
                name: name.to_string(),
                capacity: Resources {
                    accelerators: spec.accelerator_count as u64,
                    milli_cpus: (spec.v_cpu_count * 1000.0).floor() as u64,
                    memory_mib: spec.memory_in_mb.floor() as u64,
                },
                accelerator_memory_gib: spec.accelerator_memory_gib,
                hourly_price: spec.hourly_price,
                priority,
                in_pool,
                model_name_override: model,
            })
        };
        for (name, priority, model) in pools {
            if let Some(type_info) = info(name, *priority, true, model.clone()) {
                types.push(type_info);
            }
        }
        for (index, instance) in scenario.fleet.instances.iter().enumerate() {
            if types.iter().any(|t| t.name == instance.instance_type) {
                continue;
            }
            match info(&instance.instance_type, 6, false, None) {
                Some(type_info) => types.push(type_info),
                None => self.error(
                    IssueKind::UnknownName,
                    format!("Fleet.Instances[{index}].InstanceType"),
                    format!("{} is not in the instance type catalogue", quoted(&instance.instance_type)),
                ),
            }
        }
        self.warn_partial_prices(&types);
        types
    }

    /// Capacity: launch limits per (type, AZ), and which (type, AZ) a `Capacity` entry limits.
    fn capacity(
        &mut self,
        scenario: &Scenario,
        catalogue: &Catalogue,
        types: &[InstanceTypeInfo],
        azs: &[String],
    ) -> LaunchCapacity {
        // Looked up once per entry (up to 100,000 fleet instances): a map, not a scan of the types.
        let type_by_name = index_by_name(types.iter().map(|t| &t.name));
        let type_index = |name: &str| type_by_name.get(name).copied();
        let az_by_name = index_by_name(azs);
        let zones = azs.len();
        let mut limits = vec![vec![LaunchLimit::default(); zones]; types.len()];
        let mut limited = vec![vec![false; zones]; types.len()];
        let mut capacity_seen = BTreeSet::new();
        for (index, entry) in scenario.capacity.iter().enumerate() {
            let path = format!("Capacity[{index}]");
            let available =
                entry.available.map(|value| self.count(&format!("{path}.Available"), value, 0, MAX_INSTANCES));
            let reserved = self.count(&format!("{path}.Reserved"), entry.reserved, 0, MAX_INSTANCES);
            let az = az_by_name.get(entry.availability_zone.as_str()).copied();
            if az.is_none() {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.AvailabilityZone"),
                    format!("{} is not in AvailabilityZones", quoted(&entry.availability_zone)),
                );
            }
            if !catalogue.contains_key(&entry.instance_type) {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.InstanceType"),
                    format!("{} is not in the instance type catalogue", quoted(&entry.instance_type)),
                );
            }
            if !capacity_seen.insert((entry.instance_type.clone(), entry.availability_zone.clone())) {
                self.error(
                    IssueKind::Duplicate,
                    path.clone(),
                    format!(
                        "a second entry for ({}, {})",
                        quoted(&entry.instance_type),
                        quoted(&entry.availability_zone)
                    ),
                );
                continue;
            }
            if let (Some(t), Some(z), Some(reserved)) = (type_index(&entry.instance_type), az, reserved) {
                if let Some(None) = available {
                    continue; // the error is already recorded
                }
                limits[t][z] = LaunchLimit { reserved, available: available.flatten() };
                limited[t][z] = true;
            }
        }
        LaunchCapacity { limits, limited }
    }

    /// Scaling: `Endpoint.ManagedInstanceScaling` and its scale-in policy.
    fn scaling(&mut self, endpoint: &Endpoint) -> ScalingLimits {
        let scaling_spec = endpoint.managed_instance_scaling.clone().unwrap_or_default();
        let scaling_path = "Endpoint.ManagedInstanceScaling";
        let min_instances = match scaling_spec.min_instance_count {
            Some(value) => {
                self.count(&format!("{scaling_path}.MinInstanceCount"), value, 0, MAX_PLANNED_INSTANCES).unwrap_or(0)
            }
            None => 0,
        };
        let max_instances = match scaling_spec.max_instance_count {
            Some(value) => self.count(&format!("{scaling_path}.MaxInstanceCount"), value, 0, MAX_INSTANCES),
            None => None,
        };
        if let Some(max) = max_instances {
            if min_instances > max {
                self.error(
                    IssueKind::Inconsistent,
                    format!("{scaling_path}.MinInstanceCount"),
                    format!("MinInstanceCount {min_instances} is greater than MaxInstanceCount {max}"),
                );
            }
        }
        if let Some(status) = &scaling_spec.status {
            if status != "ENABLED" && status != "DISABLED" {
                self.error(
                    IssueKind::InvalidValue,
                    format!("{scaling_path}.Status"),
                    format!("{} is not ENABLED or DISABLED", quoted(status)),
                );
            }
        }
        let policy = scaling_spec.scale_in_policy.clone().unwrap_or_default();
        let policy_path = format!("{scaling_path}.ScaleInPolicy");
        let strategy = match policy.strategy.as_deref() {
            None | Some("IDLE_RELEASE") => ScaleInStrategy::IdleRelease,
            Some("CONSOLIDATION") => ScaleInStrategy::Consolidation,
            Some(other) => {
                self.error(
                    IssueKind::InvalidValue,
                    format!("{policy_path}.Strategy"),
                    format!("{} is not IDLE_RELEASE or CONSOLIDATION", quoted(other)),
                );
                ScaleInStrategy::IdleRelease
            }
        };
        let maximum_step_size = match policy.maximum_step_size {
            Some(value) => self.count(&format!("{policy_path}.MaximumStepSize"), value, 1, 100).unwrap_or(1),
            None => 1,
        };
        let cooldown_minutes = match policy.cooldown_in_minutes {
            Some(value) => self.count(&format!("{policy_path}.CooldownInMinutes"), value, 5, 1440).unwrap_or(20),
            None => 20,
        };
        ScalingLimits { min_instances, max_instances, strategy, maximum_step_size, cooldown_minutes }
    }

    /// Components: the endpoint's model (single-model endpoint) or its inference components,
    /// then the total copy count.
    fn components(&mut self, scenario: &Scenario, types: &[InstanceTypeInfo], zones: usize) -> Components {
        let endpoint = &scenario.endpoint;
        let mut components: Vec<Component> = Vec::new();
        let single_model = scenario.inference_components.is_empty();
        let variant_name =
            if endpoint.variant_name.is_empty() { "AllTraffic".to_string() } else { endpoint.variant_name.clone() };
        if single_model {
            if let Some(count) = endpoint.desired_instance_count {
                if let Some(copy_count) = self.count("Endpoint.DesiredInstanceCount", count, 0, MAX_PLANNED_INSTANCES) {
                    let requirements = types
                        .iter()
                        .map(|t| {
                            Some(Requirement::with_builds(
                                t.capacity,
                                t.model_name_override.clone(),
                                endpoint.model_name.clone(),
                            ))
                        })
                        .collect();
                    components.push(Component {
                        name: variant_name.clone(),
                        copy_count,
                        requirements,
                        strategy: PlacementStrategy::Spread,
                        max_imbalance: Some(1),
                    });
                }
            }
        } else if endpoint.desired_instance_count.is_some() {
            self.warn(
                WarningKind::Ignored,
                "Endpoint.DesiredInstanceCount",
                "ignored: the endpoint hosts inference components, whose CopyCount drives the plan",
            );
        }
        let mut names = BTreeSet::new();
        for (index, spec) in scenario.inference_components.iter().enumerate() {
            if let Some(component) = self.inference_component(index, spec, &mut names, types, zones) {
                components.push(component);
            }
        }

        let total_copies: u64 = components.iter().map(|component| u64::from(component.copy_count)).sum();
        if total_copies > MAX_TOTAL_COPIES {
            self.error(
                IssueKind::TooLarge,
                "InferenceComponents",
                format!(
                    "the copy counts add up to {total_copies}; at most {MAX_TOTAL_COPIES} are accepted (size limits)"
                ),
            );
        }
        Components { components, single_model, variant_name }
    }

    /// One inference component: its name (not empty, not seen before in `names`), copy count,
    /// specifications and scheduling; `None` when its copy count is invalid.
    fn inference_component(
        &mut self,
        index: usize,
        spec: &InferenceComponent,
        names: &mut BTreeSet<String>,
        types: &[InstanceTypeInfo],
        zones: usize,
    ) -> Option<Component> {
        let path = format!("InferenceComponents[{index}]");
        let name = &spec.inference_component_name;
        if name.is_empty() {
            self.error(IssueKind::Empty, format!("{path}.InferenceComponentName"), "empty name");
        } else if !names.insert(name.clone()) {
            self.error(
                IssueKind::Duplicate,
                format!("{path}.InferenceComponentName"),
                format!("{} is listed twice", quoted(name)),
            );
        }
        let copy_count = self.count(
            &format!("{path}.RuntimeConfig.CopyCount"),
            spec.runtime_config.copy_count,
            0,
            MAX_COPIES_PER_COMPONENT,
        );
        let (requirements, configs) = self.specifications(&path, spec, types);
        let (strategy, max_imbalance) = self.scheduling(&configs);
        let copy_count = copy_count?;
        if let Some(limit) = max_imbalance {
            let zones = zones as u32;
            if copy_count == 1 {
                self.warn(
                    WarningKind::SingleCopy,
                    format!("{path}.RuntimeConfig.CopyCount"),
                    format!("single copy of {name}: one AZ outage takes it down"),
                );
            } else if zones > 1 && limit == 0 && copy_count % zones != 0 {
                self.warn(
                    WarningKind::ImbalanceUnreachable,
                    format!("{path}.RuntimeConfig.CopyCount"),
                    format!("{copy_count} copies over {zones} AZs can never meet MaxImbalance 0 (best is 1)"),
                );
            }
        }
        Some(Component { name: name.clone(), copy_count, requirements, strategy, max_imbalance })
    }

    /// A component's `Specification` or `Specifications`: its requirement per problem type and
    /// its scheduling configs with their paths.
    fn specifications<'a>(
        &mut self,
        path: &str,
        spec: &'a InferenceComponent,
        types: &[InstanceTypeInfo],
    ) -> (Vec<Option<Requirement>>, Vec<(String, &'a SchedulingConfig)>) {
        let pool_index = |name: &str| types.iter().position(|t| t.in_pool && t.name == name);
        let mut requirements: Vec<Option<Requirement>> = vec![None; types.len()];
        let mut configs: Vec<(String, &SchedulingConfig)> = Vec::new();
        match (&spec.specification, &spec.specifications) {
            (Some(_), Some(_)) => {
                self.error(IssueKind::Conflict, path, "give either Specification or Specifications, not both");
            }
            (None, None) => {
                self.error(IssueKind::MissingField, path, "one of Specification or Specifications is required");
            }
            (Some(single), None) => {
                let spec_path = format!("{path}.Specification");
                if let Some(resources) = self.requirement(&spec_path, &single.compute_resource_requirements) {
                    for (t, info) in types.iter().enumerate() {
                        requirements[t] = Some(Requirement::with_builds(
                            resources,
                            info.model_name_override.clone(),
                            single.model_name.clone(),
                        ));
                    }
                }
                if let Some(config) = &single.scheduling_config {
                    configs.push((spec_path.clone(), config));
                }
            }
            (None, Some(list)) => {
                if list.is_empty() || list.len() > MAX_SPECIFICATIONS {
                    self.error(
                        IssueKind::TooLarge,
                        format!("{path}.Specifications"),
                        format!("{} specifications given, 1 to 5 are allowed", list.len()),
                    );
                }
                for (spec_index, item) in list.iter().enumerate() {
                    let spec_path = format!("{path}.Specifications[{spec_index}]");
                    let resources = self.requirement(&spec_path, &item.compute_resource_requirements);
                    if let Some(config) = &item.scheduling_config {
                        configs.push((spec_path.clone(), config));
                    }
                    let Some(type_name) = &item.instance_type else {
                        self.error(
                            IssueKind::MissingField,
                            format!("{spec_path}.InstanceType"),
                            "is required in Specifications",
                        );
                        continue;
                    };
                    let Some(t) = pool_index(type_name) else {
                        self.error(
                            IssueKind::UnknownName,
                            format!("{spec_path}.InstanceType"),
                            format!("{} is not in Endpoint.InstancePools", quoted(type_name)),
                        );
                        continue;
                    };
                    if requirements[t].is_some() {
                        self.error(
                            IssueKind::Duplicate,
                            format!("{spec_path}.InstanceType"),
                            format!("{} is listed twice", quoted(type_name)),
                        );
                        continue;
                    }
                    if let Some(resources) = resources {
                        requirements[t] = Some(Requirement::with_builds(
                            resources,
                            item.model_name.clone(),
                            types[t].model_name_override.clone(),
                        ));
                    }
                }
            }
        }
        (requirements, configs)
    }

    /// A component's scheduling: all its configs must agree; the first gives the placement
    /// strategy and the AZ balance limit (`None` when not asked for).
    fn scheduling(&mut self, configs: &[(String, &SchedulingConfig)]) -> (PlacementStrategy, Option<u32>) {
        if let Some((first_path, first)) = configs.first() {
            if let Some((other_path, _)) = configs.iter().find(|(_, config)| config != first) {
                self.error(
                    IssueKind::Inconsistent,
                    format!("{other_path}.SchedulingConfig"),
                    format!("differs from {first_path}.SchedulingConfig; all specifications must agree"),
                );
            }
        }
        let mut strategy = PlacementStrategy::Spread;
        let mut max_imbalance = None;
        if let Some((spec_path, config)) = configs.first() {
            let config_path = format!("{spec_path}.SchedulingConfig");
            match config.placement_strategy.as_deref() {
                None | Some("SPREAD") => {}
                Some("BINPACK") => strategy = PlacementStrategy::Binpack,
                Some(other) => self.error(
                    IssueKind::InvalidValue,
                    format!("{config_path}.PlacementStrategy"),
                    format!("{} is not SPREAD or BINPACK", quoted(other)),
                ),
            }
            if let Some(balance) = &config.availability_zone_balance {
                let balance_path = format!("{config_path}.AvailabilityZoneBalance");
                if let Some(mode) = &balance.enforcement_mode {
                    if mode != "PERMISSIVE" {
                        self.error(
                            IssueKind::InvalidValue,
                            format!("{balance_path}.EnforcementMode"),
                            format!("{} is not PERMISSIVE", quoted(mode)),
                        );
                    }
                }
                max_imbalance = match balance.max_imbalance {
                    Some(value) => self.count(&format!("{balance_path}.MaxImbalance"), value, 0, 100),
                    None => Some(0),
                };
            }
        }
        (strategy, max_imbalance)
    }

    /// Fleet: its instances, the copies they run, and whether each instance already packs.
    fn fleet(
        &mut self,
        scenario: &Scenario,
        types: &[InstanceTypeInfo],
        components: &[Component],
        azs: &[String],
        single_model: bool,
    ) -> Vec<ExistingInstance> {
        let mut listed = self.fleet_instances(scenario, types, azs);
        let copies = self.fleet_copies(scenario, types, components, &mut listed, single_model);
        let ListedFleet { mut fleet, untrusted, .. } = listed;
        for (instance, per_instance) in fleet.iter_mut().zip(copies) {
            instance.copies = per_instance.into_iter().filter(|&(_, count)| count > 0).collect();
        }
        self.check_packing(scenario, types, components, &fleet, &untrusted);
        fleet
    }

    /// `Fleet.Instances`: ids, AZs and states.
    fn fleet_instances(&mut self, scenario: &Scenario, types: &[InstanceTypeInfo], azs: &[String]) -> ListedFleet {
        let az_by_name = index_by_name(azs);
        // Looked up once per entry (up to 100,000 fleet instances): a map, not a scan of the types.
        let type_by_name = index_by_name(types.iter().map(|t| &t.name));
        let type_index = |name: &str| type_by_name.get(name).copied();
        let mut fleet: Vec<ExistingInstance> = Vec::new();
        let mut ids = BTreeSet::new();
        let mut untrusted: BTreeSet<String> = BTreeSet::new();
        for (index, instance) in scenario.fleet.instances.iter().enumerate() {
            let path = format!("Fleet.Instances[{index}]");
            if instance.instance_id.is_empty() {
                self.error(IssueKind::Empty, format!("{path}.InstanceId"), "empty id");
                untrusted.insert(String::new());
            } else if !ids.insert(instance.instance_id.clone()) {
                self.error(
                    IssueKind::Duplicate,
                    format!("{path}.InstanceId"),
                    format!("{} is listed twice", quoted(&instance.instance_id)),
                );
                untrusted.insert(instance.instance_id.clone());
            }
            let az = az_by_name.get(instance.availability_zone.as_str()).copied();
            if az.is_none() {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.AvailabilityZone"),
                    format!("{} is not in AvailabilityZones", quoted(&instance.availability_zone)),
                );
            }
            let draining = match instance.state.as_deref() {
                None | Some("InService") => false,
                Some("Draining") => true,
                Some(other) => {
                    self.error(
                        IssueKind::InvalidValue,
                        format!("{path}.State"),
                        format!("{} is not InService or Draining", quoted(other)),
                    );
                    false
                }
            };
            if let (Some(type_index), Some(az_index)) = (type_index(&instance.instance_type), az) {
                fleet.push(ExistingInstance {
                    id: instance.instance_id.clone(),
                    type_index,
                    az_index,
                    reserved: instance.reserved,
                    copies: Vec::new(),
                    draining,
                });
            }
        }
        ListedFleet { fleet, ids, untrusted }
    }

    /// `Fleet.Copies`: copies per component for each instance of `fleet`; an instance with a
    /// copy entry in error becomes untrusted.
    fn fleet_copies(
        &mut self,
        scenario: &Scenario,
        types: &[InstanceTypeInfo],
        components: &[Component],
        listed: &mut ListedFleet,
        single_model: bool,
    ) -> Vec<BTreeMap<usize, u32>> {
        let ListedFleet { fleet, ids, untrusted } = listed;
        // Lookups by name, built once: a fleet may list 100,000 instances and as many copies.
        let fleet_by_id = index_by_name(fleet.iter().map(|instance| &instance.id));
        let component_by_name = index_by_name(components.iter().map(|component| &component.name));
        let declared_components: BTreeSet<&str> =
            scenario.inference_components.iter().map(|c| c.inference_component_name.as_str()).collect();
        let mut copies: Vec<BTreeMap<usize, u32>> = vec![BTreeMap::new(); fleet.len()];
        if single_model && scenario.fleet.copies.is_empty() && !components.is_empty() {
            // A single-model endpoint runs the model on every instance.
            for per_instance in copies.iter_mut() {
                per_instance.insert(0, 1);
            }
        }
        for (index, copy) in scenario.fleet.copies.iter().enumerate() {
            let path = format!("Fleet.Copies[{index}]");
            let count = self.count(&format!("{path}.CopyCount"), copy.copy_count, 0, MAX_COPIES_PER_COMPONENT);
            let component = component_by_name.get(copy.inference_component_name.as_str()).copied();
            if component.is_none() && !declared_components.contains(copy.inference_component_name.as_str()) {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.InferenceComponentName"),
                    format!(
                        "{} is not an inference component of this endpoint",
                        quoted(&copy.inference_component_name)
                    ),
                );
            }
            let instance = fleet_by_id.get(copy.instance_id.as_str()).copied();
            if instance.is_none() && !ids.contains(&copy.instance_id) {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.InstanceId"),
                    format!("{} is not an instance in Fleet.Instances", quoted(&copy.instance_id)),
                );
            }
            let (Some(component), Some(instance), Some(count)) = (component, instance, count) else {
                untrusted.insert(copy.instance_id.clone());
                continue;
            };
            let type_index = fleet[instance].type_index;
            if components[component].requirements[type_index].is_none() {
                self.error(
                    IssueKind::Inconsistent,
                    path.clone(),
                    format!(
                        "{} has no specification for {} (instance {})",
                        copy.inference_component_name, types[type_index].name, copy.instance_id
                    ),
                );
                untrusted.insert(copy.instance_id.clone());
                continue;
            }
            let entry = copies[instance].entry(component).or_insert(0);
            *entry = entry.saturating_add(count);
        }
        copies
    }

    /// Packing is checked on every instance whose copies are fully known, so an unrelated fleet
    /// error does not hide a packing error.
    fn check_packing(
        &mut self,
        scenario: &Scenario,
        types: &[InstanceTypeInfo],
        components: &[Component],
        fleet: &[ExistingInstance],
        untrusted: &BTreeSet<String>,
    ) {
        // Where each instance id is first listed in the scenario, for messages.
        let listed_at = index_by_name(scenario.fleet.instances.iter().map(|instance| &instance.instance_id));
        for instance in fleet {
            if untrusted.contains(&instance.id) {
                continue;
            }
            let capacity = types[instance.type_index].capacity;
            let mut used = Resources::ZERO;
            for &(component, count) in &instance.copies {
                if let Some(requirement) = &components[component].requirements[instance.type_index] {
                    used = used.plus(&requirement.resources.times(u64::from(count)));
                }
            }
            if !used.fits_in(&capacity) {
                let index = listed_at.get(instance.id.as_str()).copied().unwrap_or(0);
                self.error(
                    IssueKind::Inconsistent,
                    format!("Fleet.Instances[{index}]"),
                    format!(
                        "instance {} ({}) already breaks packing: its {}",
                        instance.id,
                        types[instance.type_index].name,
                        used.overbooking_text(&capacity)
                    ),
                );
            }
        }
    }

    /// AZs where no pool type can launch.
    fn warn_azs_without_capacity(
        &mut self,
        azs: &[String],
        types: &[InstanceTypeInfo],
        limits: &[Vec<LaunchLimit>],
        limited: &[Vec<bool>],
    ) {
        for (z, az) in azs.iter().enumerate() {
            let pool_types: Vec<usize> = types.iter().enumerate().filter(|(_, t)| t.in_pool).map(|(i, _)| i).collect();
            if !pool_types.is_empty() && pool_types.iter().all(|&t| limited[t][z] && limits[t][z].total() == Some(0)) {
                self.warn(
                    WarningKind::NoCapacityInAz,
                    format!("AvailabilityZones[{z}]"),
                    format!("no pool instance type can launch in {az} (Capacity is 0 for every type)"),
                );
            }
        }
    }

    /// Validates `Now`, `CapacityErrorTtlSeconds` and `CapacityEvents` and returns `Now` and the
    /// live blocks: per (type, AZ) the latest event (by `Time`, a tie going to the later entry)
    /// blocks when it is an error and `Now − Time < CapacityErrorTtlSeconds`.
    fn capacity_events(
        &mut self,
        scenario: &Scenario,
        catalogue: &BTreeMap<String, (InstanceTypeSpec, String)>,
        types: &[InstanceTypeInfo],
        azs: &[String],
    ) -> (Option<i64>, BTreeMap<(TypeIndex, AzIndex), CapacityBlock>) {
        let time_range = (-(MAX_TIME_SECONDS as f64), MAX_TIME_SECONDS as f64);
        let now = scenario.now.and_then(|value| self.number("Now", value, Kind::Integer, time_range.0, time_range.1));
        let now = now.map(|value| value as i64);
        let ttl = match scenario.capacity_error_ttl_seconds {
            Some(value) => self
                .count("CapacityErrorTtlSeconds", value, 0, MAX_CAPACITY_ERROR_TTL_SECONDS)
                .unwrap_or(DEFAULT_CAPACITY_ERROR_TTL_SECONDS),
            None => DEFAULT_CAPACITY_ERROR_TTL_SECONDS,
        };
        if !scenario.capacity_events.is_empty() && scenario.now.is_none() {
            self.error(IssueKind::MissingField, "Now", "is required when CapacityEvents is given");
        }
        // Looked up once per event (up to MAX_CAPACITY_EVENTS): maps, not scans.
        let az_by_name = index_by_name(azs);
        let type_by_name = index_by_name(types.iter().map(|info| &info.name));
        // (type, AZ) → (kind, time) of the latest event so far.
        let mut latest: BTreeMap<(TypeIndex, AzIndex), (CapacityEventKind, i64)> = BTreeMap::new();
        for (index, event) in scenario.capacity_events.iter().enumerate() {
            let path = format!("CapacityEvents[{index}]");
            let kind = CapacityEventKind::parse(&event.event);
            if kind.is_none() {
                self.error(
                    IssueKind::InvalidValue,
                    format!("{path}.Event"),
                    format!("{} is not InsufficientCapacity, ProvisioningTimeout or Launched", quoted(&event.event)),
                );
            }
            let time = self
                .number(&format!("{path}.Time"), event.time, Kind::Integer, time_range.0, time_range.1)
                .map(|value| value as i64);
            if let (Some(time), Some(now)) = (time, now) {
                if time > now {
                    self.error(IssueKind::Inconsistent, format!("{path}.Time"), format!("{time} is after Now ({now})"));
                }
            }
            if !catalogue.contains_key(&event.instance_type) {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.InstanceType"),
                    format!("{} is not in the instance type catalogue", quoted(&event.instance_type)),
                );
            }
            let az = az_by_name.get(event.availability_zone.as_str()).copied().map(AzIndex::new);
            if az.is_none() {
                self.error(
                    IssueKind::UnknownName,
                    format!("{path}.AvailabilityZone"),
                    format!("{} is not in AvailabilityZones", quoted(&event.availability_zone)),
                );
            }
            // A catalogue type that is neither in the pool nor in the fleet is never launched.
            let type_index = type_by_name.get(event.instance_type.as_str()).copied().map(TypeIndex::new);
            if let (Some(kind), Some(time), Some(t), Some(z)) = (kind, time, type_index, az) {
                if latest.get(&(t, z)).is_none_or(|&(_, seen)| time >= seen) {
                    latest.insert((t, z), (kind, time));
                }
            }
        }
        let mut blocks = BTreeMap::new();
        if let Some(now) = now {
            for (group, (event, time)) in latest {
                if event.is_error() && now.saturating_sub(time) < i64::from(ttl) {
                    blocks.insert(group, CapacityBlock { event, time, until: time.saturating_add(i64::from(ttl)) });
                }
            }
        }
        (now, blocks)
    }

    /// One warning when some pool or fleet types have a price and some do not (contract §2 L4:
    /// a final fleet with an unpriced type costs instances, not dollars).
    fn warn_partial_prices(&mut self, types: &[InstanceTypeInfo]) {
        let (priced, unpriced): (Vec<&InstanceTypeInfo>, Vec<&InstanceTypeInfo>) =
            types.iter().partition(|info| info.hourly_price.is_some());
        if priced.is_empty() || unpriced.is_empty() {
            return;
        }
        let names = |in_pool: bool| -> Vec<String> {
            unpriced.iter().filter(|info| info.in_pool == in_pool).map(|info| info.name.clone()).collect()
        };
        let mut parts = Vec::new();
        for (label, list) in [("pool", names(true)), ("fleet", names(false))] {
            if !list.is_empty() {
                parts.push(format!("{label} {}", list.join(", ")));
            }
        }
        self.warn(
            WarningKind::PartialPrices,
            "InstanceTypes",
            format!(
                "no HourlyPrice for {}: a final fleet with one of them costs instances, not dollars (CostUnit \"instances\")",
                parts.join("; ")
            ),
        );
    }

    /// Converts a requirement to integer resources (milli-cores and MiB rounded up).
    fn requirement(&mut self, path: &str, spec: &ComputeResourceRequirements) -> Option<Resources> {
        let path = format!("{path}.ComputeResourceRequirements");
        let accelerators = match spec.number_of_accelerator_devices_required {
            Some(value) => {
                self.number(&format!("{path}.NumberOfAcceleratorDevicesRequired"), value, Kind::Integer, 0.0, 1024.0)
            }
            None => Some(0.0),
        };
        let cpus = match spec.number_of_cpu_cores_required {
            Some(value) => self.number(&format!("{path}.NumberOfCpuCoresRequired"), value, Kind::Decimal, 0.25, 1e6),
            None => Some(0.0),
        };
        let memory = self.number(
            &format!("{path}.MinMemoryRequiredInMb"),
            spec.min_memory_required_in_mb,
            Kind::Decimal,
            128.0,
            1e12,
        );
        Some(Resources {
            accelerators: accelerators? as u64,
            milli_cpus: (cpus? * 1000.0).ceil() as u64,
            memory_mib: memory?.ceil() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scenario;

    fn base() -> Scenario {
        crate::ScenarioBuilder::new(["a", "b"])
            .pool("ml.g6.12xlarge", 1)
            .component("chat", 4, 1, 0.5, 1000)
            .build()
            .unwrap()
    }

    fn paths(scenario: &Scenario) -> Vec<String> {
        Problem::new(scenario).unwrap_err().issues().iter().map(|issue| issue.path.clone()).collect()
    }

    #[test]
    fn resources_become_integers_rounded_up_for_needs_and_down_for_offers() {
        let mut scenario = base();
        scenario.inference_components[0]
            .specification
            .as_mut()
            .unwrap()
            .compute_resource_requirements
            .min_memory_required_in_mb = 1000.5;
        let problem = Problem::new(&scenario).unwrap();
        let need = problem.components()[0].requirements[0].as_ref().unwrap().resources;
        assert_eq!(need, Resources { accelerators: 1, milli_cpus: 500, memory_mib: 1001 });
        assert_eq!(
            problem.instance_types()[0].capacity,
            Resources { accelerators: 4, milli_cpus: 48_000, memory_mib: 196_608 }
        );
    }

    #[test]
    fn every_problem_is_reported_not_just_the_first() {
        let mut scenario = base();
        scenario.availability_zones.push("a".into());
        scenario.endpoint.instance_pools[0].priority = 7;
        scenario.inference_components[0].runtime_config.copy_count = 100_001;
        scenario.capacity.push(model::CapacityEntry {
            instance_type: "ml.g6.12xlarge".into(),
            availability_zone: "zz".into(),
            available: Some(1),
            reserved: 0,
        });
        assert_eq!(
            paths(&scenario),
            vec![
                "AvailabilityZones[2]",
                "Endpoint.InstancePools[0].Priority",
                "Capacity[0].AvailabilityZone",
                "InferenceComponents[0].RuntimeConfig.CopyCount",
            ]
        );
    }

    #[test]
    fn specification_outside_the_pool_is_named() {
        let mut scenario = base();
        let component = &mut scenario.inference_components[0];
        let mut spec = component.specification.take().unwrap();
        spec.instance_type = Some("ml.g6.4xlarge".into());
        component.specifications = Some(vec![spec]);
        let error = Problem::new(&scenario).unwrap_err();
        assert_eq!(
            error.to_string(),
            "InferenceComponents[0].Specifications[0].InstanceType: \"ml.g6.4xlarge\" is not in Endpoint.InstancePools \
             (component \"chat\")"
        );
    }

    #[test]
    fn fleet_that_breaks_packing_is_rejected() {
        let scenario = crate::ScenarioBuilder::new(["a"])
            .pool("ml.g6.12xlarge", 1)
            .component("big", 4, 3, 0.0, 1024)
            .fleet_instance("i-1", "ml.g6.12xlarge", "a", false)
            .fleet_copies("big", "i-1", 2)
            .build()
            .unwrap();
        let error = Problem::new(&scenario).unwrap_err();
        assert!(error.to_string().contains("already breaks packing"), "{error}");
    }

    #[test]
    fn single_model_endpoint_is_one_whole_instance_component() {
        let mut scenario = crate::ScenarioBuilder::new(["a", "b"]).pool("ml.g5.xlarge", 1).build().unwrap();
        scenario.endpoint.desired_instance_count = Some(3);
        let problem = Problem::new(&scenario).unwrap();
        assert!(problem.is_single_model());
        let component = &problem.components()[0];
        assert_eq!(
            (component.name.as_str(), component.copy_count, component.max_imbalance),
            ("AllTraffic", 3, Some(1))
        );
        assert_eq!(component.requirements[0].as_ref().unwrap().resources, problem.instance_types()[0].capacity);
    }

    #[test]
    fn warnings_flag_single_copies_and_unreachable_balance() {
        let scenario = crate::ScenarioBuilder::new(["a", "b", "c"])
            .pool("ml.g6.12xlarge", 1)
            .component("one", 1, 1, 0.0, 1024)
            .max_imbalance("one", 1)
            .component("two", 2, 1, 0.0, 1024)
            .max_imbalance("two", 0)
            .capacity("ml.g6.12xlarge", "c", Some(0), 0)
            .build()
            .unwrap();
        let problem = Problem::new(&scenario).unwrap();
        let kinds: Vec<WarningKind> = problem.warnings().iter().map(|w| w.kind).collect();
        assert_eq!(
            kinds,
            vec![WarningKind::SingleCopy, WarningKind::ImbalanceUnreachable, WarningKind::NoCapacityInAz]
        );
    }

    #[test]
    fn min_above_max_is_an_error() {
        let scenario =
            crate::ScenarioBuilder::new(["a"]).pool("ml.g5.xlarge", 1).instance_limits(3, Some(2)).build().unwrap();
        assert_eq!(paths(&scenario), vec!["Endpoint.ManagedInstanceScaling.MinInstanceCount"]);
    }
}
