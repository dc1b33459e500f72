//! Per-type model configurations: how one model runs on each instance type of a pool.
//!
//! The seeds (docs/contract.md, Background) run one model as a different build per pool type — tensor parallel
//! on the preferred type, a quantised build on the last fallback — each named by the pool's
//! `ModelNameOverride`. [`size`] makes that choice from a [`ModelDescription`] and the types'
//! shapes, and emits per type the `Specifications` entry fleetplan packs plus the maximum
//! concurrency one instance sustains (the `MaxConcurrency` of [`crate::metrics::TypeLoad`]).
//!
//! The rule, per instance type (docs/sizing.md has the formulas and their sources):
//! 1. Try the precisions in the order given (the preferred one first).
//! 2. For a precision, try the tensor-parallel degrees `t` that divide the type's accelerator
//!    count, smallest first. `t` fits when, on each of the `t` devices,
//!    `ceil(weights / t) + TargetConcurrency × KV cache per request on one device ≤ usable`,
//!    where `usable = floor(device bytes × (1 − OverheadFraction))`, and when one instance
//!    holds the copy's host memory and CPU cores.
//! 3. The first precision with a fitting degree wins, with its smallest fitting degree: a build
//!    is quantised only when no degree fits at a higher precision, even if the quantised build
//!    would need fewer accelerators.
//!
//! All byte arithmetic is exact integer arithmetic (`u128`); the only rounding is the overhead
//! fraction, read to the nearest part per million, and a fractional `AcceleratorMemoryGiB`,
//! rounded down to whole bytes. Nothing here panics or does I/O.
//!
//! ```
//! use fleetplan::sizing::{size, KvCache, ModelDescription, Precision};
//! use fleetplan::InstanceTypeSpec;
//!
//! let mut model = ModelDescription::new(
//!     "llama-70b",
//!     70_000_000_000,
//!     vec![Precision::Fp16, Precision::Fp8, Precision::Int4],
//!     KvCache::Architecture { layers: 80, key_value_heads: 8, head_dim: 128, precision: Precision::Fp16 },
//!     8192,
//!     8,
//! );
//! model.overhead_fraction = 0.1;
//! let p5 = InstanceTypeSpec {
//!     instance_type: "ml.p5.48xlarge".into(),
//!     accelerator_count: 8,
//!     accelerator_memory_gib: 80.0,
//!     v_cpu_count: 192.0,
//!     memory_in_mb: 2_097_152.0,
//!     hourly_price: None,
//! };
//! let sizing = size(&model, &[p5]).unwrap();
//! let build = sizing.types[0].build().unwrap();
//! assert_eq!((build.tensor_parallel_degree, build.precision), (4, Precision::Fp16));
//! assert_eq!(build.model_name, "llama-70b-tp4-fp16");
//! ```

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Issue, IssueKind, ValidationError};
use crate::model::{ComponentSpecification, ComputeResourceRequirements, InstanceTypeSpec};

/// Default share of each accelerator's memory kept back for activations, the CUDA context and
/// the runtime: 10%, as vLLM's default `gpu_memory_utilization = 0.9` keeps back.
pub const DEFAULT_OVERHEAD_FRACTION: f64 = 0.10;
/// Default host memory per copy on top of the weights, in MiB (the serving process, tokenizer
/// and pinned buffers): 4 GiB.
pub const DEFAULT_HOST_MEMORY_OVERHEAD_MIB: u64 = 4096;
/// Default CPU cores per accelerator a copy uses: 2 (one driving the device, one for
/// scheduling and tokenisation).
pub const DEFAULT_CPU_CORES_PER_ACCELERATOR: u64 = 2;

/// Largest accepted `ParameterCount` (10^15).
pub const MAX_PARAMETER_COUNT: u64 = 1_000_000_000_000_000;
/// Largest accepted `KvCache.BytesPerToken` (10^12).
pub const MAX_KV_BYTES_PER_TOKEN: u64 = 1_000_000_000_000;
/// Largest accepted `KvCache.Layers`, `KvCache.KeyValueHeads` and `KvCache.HeadDim`.
pub const MAX_KV_DIMENSION: u64 = 100_000;
/// Largest accepted `ContextLength` (10^8 tokens).
pub const MAX_CONTEXT_LENGTH: u64 = 100_000_000;
/// Largest accepted `TargetConcurrency`.
pub const MAX_TARGET_CONCURRENCY: u64 = 1_000_000;
/// Largest accepted `HostMemoryOverheadMiB`.
pub const MAX_HOST_MEMORY_OVERHEAD_MIB: u64 = 1_000_000_000;
/// Largest accepted `CpuCoresPerAccelerator`.
pub const MAX_CPU_CORES_PER_ACCELERATOR: u64 = 1024;
/// Longest accepted model `Name`: the longest suffix, `-tp1024-fp32`, keeps every build name
/// within SageMaker's 63-character `ModelName` limit.
pub const MAX_NAME_LENGTH: usize = 50;

/// Most accelerators per instance the sizing considers (the catalogue's own limit).
const MAX_ACCELERATORS: u64 = 1024;
/// Largest accelerator memory per device the arithmetic takes, GiB (larger figures are capped).
const MAX_DEVICE_GIB: f64 = (1u64 << 40) as f64;
const PARTS_PER_MILLION: u128 = 1_000_000;
const GIB: u128 = 1 << 30;
const MIB: u128 = 1 << 20;

/// A weight (or KV-cache) number format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum Precision {
    /// 32-bit float, 4 bytes per parameter.
    #[serde(rename = "FP32")]
    Fp32,
    /// bfloat16, 2 bytes per parameter.
    #[serde(rename = "BF16")]
    Bf16,
    /// 16-bit float, 2 bytes per parameter.
    #[serde(rename = "FP16")]
    Fp16,
    /// 8-bit float, 1 byte per parameter.
    #[serde(rename = "FP8")]
    Fp8,
    /// 8-bit integer, 1 byte per parameter.
    #[serde(rename = "INT8")]
    Int8,
    /// 4-bit integer, half a byte per parameter (scales and zero points not counted).
    #[serde(rename = "INT4")]
    Int4,
}

impl Precision {
    /// Every precision, widest first.
    pub const ALL: [Precision; 6] =
        [Precision::Fp32, Precision::Bf16, Precision::Fp16, Precision::Fp8, Precision::Int8, Precision::Int4];

    /// Bits per value.
    pub fn bits(self) -> u32 {
        match self {
            Precision::Fp32 => 32,
            Precision::Bf16 | Precision::Fp16 => 16,
            Precision::Fp8 | Precision::Int8 => 8,
            Precision::Int4 => 4,
        }
    }

    /// The name used in model files and tables: `FP16`, `INT4`, ….
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "FP32",
            Precision::Bf16 => "BF16",
            Precision::Fp16 => "FP16",
            Precision::Fp8 => "FP8",
            Precision::Int8 => "INT8",
            Precision::Int4 => "INT4",
        }
    }

    /// The name in lower case, as it appears in build names (`llama-70b-tp4-fp16`).
    pub fn slug(self) -> String {
        self.name().to_ascii_lowercase()
    }

    /// The precision named exactly `name` (`FP16`, not `fp16`).
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|precision| precision.name() == name)
    }

    /// Bytes that `count` values take, rounded up to whole bytes.
    fn bytes(self, count: u128) -> u128 {
        count.saturating_mul(u128::from(self.bits())).div_ceil(8)
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much KV cache one token of context needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvCache {
    /// A measured or published figure: bytes per token for the whole model (all layers, keys
    /// and values). Tensor parallelism divides it evenly (rounded up per device).
    PerToken {
        /// Bytes per token.
        bytes: u64,
    },
    /// From the architecture: `2 × layers × key_value_heads × head_dim × bytes(precision)` per
    /// token. Tensor parallelism gives each device `ceil(key_value_heads / t)` heads (a head is
    /// never split; with more devices than heads, heads are replicated, as vLLM does).
    Architecture {
        /// Transformer layers (`num_hidden_layers`).
        layers: u64,
        /// Key/value heads (`num_key_value_heads`; fewer than attention heads with GQA/MQA).
        key_value_heads: u64,
        /// Dimension of one head (`hidden_size / num_attention_heads`).
        head_dim: u64,
        /// Number format of the cache (usually FP16/BF16, whatever the weights).
        precision: Precision,
    },
}

impl KvCache {
    /// KV-cache bytes per token on one device of a tensor-parallel group of `degree` devices.
    fn bytes_per_token_per_device(&self, degree: u64) -> u128 {
        let degree = u128::from(degree.max(1));
        match *self {
            KvCache::PerToken { bytes } => u128::from(bytes).div_ceil(degree),
            KvCache::Architecture { layers, key_value_heads, head_dim, precision } => {
                let heads = u128::from(key_value_heads).div_ceil(degree);
                let values =
                    [u128::from(layers), heads, u128::from(head_dim)].into_iter().fold(2u128, u128::saturating_mul);
                precision.bytes(values)
            }
        }
    }

    /// KV-cache bytes per token for the whole model (one device holding everything).
    pub fn bytes_per_token(&self) -> u128 {
        self.bytes_per_token_per_device(1)
    }
}

/// What a model needs: the input of [`size`]. Field names follow the model file's keys
/// (docs/sizing.md). Build one with [`ModelDescription::new`] (which fills the defaults) or
/// [`ModelDescription::from_json`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelDescription {
    /// Base name of the builds: letters, digits and `-`, starting and ending with a letter or
    /// digit, at most [`MAX_NAME_LENGTH`] characters. Builds are named `<name>-tp<N>-<precision>`.
    pub name: String,
    /// Parameters (weights), e.g. 70 000 000 000.
    pub parameter_count: u64,
    /// Weight precisions the user has builds for, preferred first (e.g. FP16, FP8, INT4).
    pub weight_precisions: Vec<Precision>,
    /// KV cache per token.
    pub kv_cache: KvCache,
    /// Context length in tokens that every request is sized for (prompt and output together).
    pub context_length: u64,
    /// Concurrent requests one copy must hold in memory at the full context length.
    pub target_concurrency: u64,
    /// Share of each accelerator's memory kept back for activations and the runtime, `[0, 1)`;
    /// default [`DEFAULT_OVERHEAD_FRACTION`].
    pub overhead_fraction: f64,
    /// Host memory per copy on top of the weights, MiB; default
    /// [`DEFAULT_HOST_MEMORY_OVERHEAD_MIB`].
    pub host_memory_overhead_mib: u64,
    /// CPU cores per accelerator of a copy; default [`DEFAULT_CPU_CORES_PER_ACCELERATOR`].
    pub cpu_cores_per_accelerator: u64,
}

impl ModelDescription {
    /// A description with the default overhead, host memory and CPU settings.
    pub fn new(
        name: &str,
        parameter_count: u64,
        weight_precisions: Vec<Precision>,
        kv_cache: KvCache,
        context_length: u64,
        target_concurrency: u64,
    ) -> ModelDescription {
        ModelDescription {
            name: name.to_string(),
            parameter_count,
            weight_precisions,
            kv_cache,
            context_length,
            target_concurrency,
            overhead_fraction: DEFAULT_OVERHEAD_FRACTION,
            host_memory_overhead_mib: DEFAULT_HOST_MEMORY_OVERHEAD_MIB,
            cpu_cores_per_accelerator: DEFAULT_CPU_CORES_PER_ACCELERATOR,
        }
    }

    /// Checks every field; reports every problem, each with the model file's path of the field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let issues = self.issues();
        if issues.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::new(issues))
        }
    }

    pub(crate) fn issues(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        let mut error = |kind: IssueKind, path: &str, message: String| issues.push(Issue::new(kind, path, message));
        if let Some(message) = name_problem(&self.name) {
            let kind = if self.name.is_empty() {
                IssueKind::Empty
            } else if self.name.chars().count() > MAX_NAME_LENGTH {
                IssueKind::TooLarge
            } else {
                IssueKind::InvalidValue
            };
            error(kind, "Name", message);
        }
        let mut range = |path: &str, value: u64, min: u64, max: u64| {
            if let Some(message) = range_problem(&value.to_string(), value as f64, min, max) {
                error(IssueKind::OutOfRange, path, message);
            }
        };
        range("ParameterCount", self.parameter_count, 1, MAX_PARAMETER_COUNT);
        range("ContextLength", self.context_length, 1, MAX_CONTEXT_LENGTH);
        range("TargetConcurrency", self.target_concurrency, 1, MAX_TARGET_CONCURRENCY);
        range("HostMemoryOverheadMiB", self.host_memory_overhead_mib, 0, MAX_HOST_MEMORY_OVERHEAD_MIB);
        range("CpuCoresPerAccelerator", self.cpu_cores_per_accelerator, 1, MAX_CPU_CORES_PER_ACCELERATOR);
        match self.kv_cache {
            KvCache::PerToken { bytes } => range("KvCache.BytesPerToken", bytes, 1, MAX_KV_BYTES_PER_TOKEN),
            KvCache::Architecture { layers, key_value_heads, head_dim, .. } => {
                range("KvCache.Layers", layers, 1, MAX_KV_DIMENSION);
                range("KvCache.KeyValueHeads", key_value_heads, 1, MAX_KV_DIMENSION);
                range("KvCache.HeadDim", head_dim, 1, MAX_KV_DIMENSION);
            }
        }
        if let Some(message) =
            overhead_problem(&crate::problem::number_text(self.overhead_fraction), self.overhead_fraction)
        {
            error(IssueKind::OutOfRange, "OverheadFraction", message);
        }
        if self.weight_precisions.is_empty() {
            error(IssueKind::Empty, "WeightPrecisions", "at least one precision is required".to_string());
        }
        for (index, precision) in self.weight_precisions.iter().enumerate() {
            if self.weight_precisions[..index].contains(precision) {
                error(
                    IssueKind::Duplicate,
                    &format!("WeightPrecisions[{index}]"),
                    format!("{precision} is listed twice"),
                );
            }
        }
        issues
    }

    /// The overhead fraction in parts per million, rounded to the nearest (valid input only).
    fn overhead_ppm(&self) -> u128 {
        // Validated to [0, 1): the product is within [0, 1e6].
        (self.overhead_fraction * 1e6).round().clamp(0.0, 1e6) as u128
    }
}

/// Why a name cannot be a build name, if it cannot.
fn name_problem(name: &str) -> Option<String> {
    let shown = crate::problem::quoted(name);
    let ok_char = |c: char| c.is_ascii_alphanumeric() || c == '-';
    if name.is_empty() {
        Some("is empty".to_string())
    } else if name.chars().count() > MAX_NAME_LENGTH {
        Some(format!("{shown} is longer than {MAX_NAME_LENGTH} characters"))
    } else if !name.chars().all(ok_char) || name.starts_with('-') || name.ends_with('-') {
        Some(format!(
            "{shown} is not a valid model name (letters, digits and '-', starting and ending with a letter or digit)"
        ))
    } else {
        None
    }
}

/// The contract's range message for a whole number shown as `shown`, if out of `[min, max]`.
pub(crate) fn range_problem(shown: &str, value: f64, min: u64, max: u64) -> Option<String> {
    if value < min as f64 {
        Some(format!("{shown} is below the minimum {min}"))
    } else if value > max as f64 {
        Some(format!("{shown} is above the maximum {max}"))
    } else {
        None
    }
}

/// The message for an overhead fraction outside `[0, 1)`.
pub(crate) fn overhead_problem(shown: &str, value: f64) -> Option<String> {
    if !value.is_finite() {
        Some(format!("{shown} is not a number"))
    } else if !(0.0..1.0).contains(&value) {
        Some(format!("{shown} is outside [0, 1)"))
    } else {
        None
    }
}

/// The build chosen for one instance type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
#[non_exhaustive]
pub struct Build {
    /// Tensor-parallel degree: devices per copy (a divisor of the type's accelerator count).
    pub tensor_parallel_degree: u64,
    /// Weight precision of the build.
    pub precision: Precision,
    /// `<name>-tp<N>-<precision>`: the `ModelName` of the specification and the pool's
    /// `ModelNameOverride`.
    pub model_name: String,
    /// `NumberOfAcceleratorDevicesRequired` (= the tensor-parallel degree).
    #[serde(rename = "NumberOfAcceleratorDevicesRequired")]
    pub accelerators: u64,
    /// `NumberOfCpuCoresRequired`: degree × `CpuCoresPerAccelerator`.
    #[serde(rename = "NumberOfCpuCoresRequired")]
    pub cpu_cores: u64,
    /// `MinMemoryRequiredInMb`: `max(128, ceil(weight bytes / 2^20) + HostMemoryOverheadMiB)`.
    #[serde(rename = "MinMemoryRequiredInMb")]
    pub min_memory_mib: u64,
    /// Weight bytes of the whole model at this precision.
    pub weight_bytes: u64,
    /// Weight bytes on each device: `ceil(weight bytes / degree)`.
    pub weight_bytes_per_device: u64,
    /// KV-cache bytes of one request at the full context on each device.
    pub kv_bytes_per_request_per_device: u64,
    /// Accelerator bytes usable on each device after the overhead fraction.
    pub usable_bytes_per_device: u64,
    /// Concurrent full-context requests one copy holds: `floor((usable − weights) / KV per request)`
    /// per device. At least the target concurrency.
    pub max_concurrency_per_copy: u64,
    /// Copies one instance holds (limited by accelerators, host memory and vCPUs).
    pub copies_per_instance: u64,
    /// Concurrent requests one instance holds: copies × per-copy concurrency. This is the
    /// `MaxConcurrency` of [`crate::metrics::TypeLoad`] (a memory ceiling: a load test may
    /// measure less).
    pub max_concurrency: u64,
}

impl Build {
    /// The build as a `Specifications` entry for `instance_type` (no `SchedulingConfig`).
    pub fn specification(&self, instance_type: &str) -> ComponentSpecification {
        ComponentSpecification {
            instance_type: Some(instance_type.to_string()),
            model_name: Some(self.model_name.clone()),
            compute_resource_requirements: ComputeResourceRequirements {
                // A divisor of a type's accelerator count (at most 1024): never saturates.
                number_of_accelerator_devices_required: Some(u32::try_from(self.accelerators).unwrap_or(u32::MAX)),
                number_of_cpu_cores_required: Some(self.cpu_cores as f64),
                min_memory_required_in_mb: self.min_memory_mib as f64,
            },
            scheduling_config: None,
        }
    }
}

/// Whether and how the model runs on one type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The chosen build.
    Fits(Build),
    /// Why no precision fits at any degree (naming the numbers of the least demanding attempt).
    DoesNotFit(String),
}

/// The sizing of one instance type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TypeSizing {
    /// Instance type.
    pub instance_type: String,
    /// Pool priority, when sized from a scenario's pool ([`size_pool`]).
    pub priority: Option<u8>,
    /// Accelerator devices of the type (as given).
    pub accelerator_count: f64,
    /// Memory per device, GiB (as given).
    pub accelerator_memory_gib: f64,
    /// The build, or why there is none.
    pub outcome: Outcome,
}

impl TypeSizing {
    /// The build, if the model fits.
    pub fn build(&self) -> Option<&Build> {
        match &self.outcome {
            Outcome::Fits(build) => Some(build),
            Outcome::DoesNotFit(_) => None,
        }
    }
}

/// The sizing of a model over instance types, in the order the types were given.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Sizing {
    /// Base name of the model.
    pub model: String,
    /// Per type.
    pub types: Vec<TypeSizing>,
}

impl Sizing {
    /// The `Specifications` entries of the types the model fits on, in type order: paste them
    /// into an inference component (one spec per type; the pool's `ModelNameOverride` should
    /// name the same build).
    pub fn specifications(&self) -> Vec<ComponentSpecification> {
        self.types.iter().filter_map(|sized| Some(sized.build()?.specification(&sized.instance_type))).collect()
    }

    /// Per type the model fits on, the maximum concurrency of one instance: the map
    /// [`crate::metrics::RollUps::type_loads`] takes.
    pub fn max_concurrency(&self) -> BTreeMap<String, f64> {
        self.types
            .iter()
            .filter_map(|sized| Some((sized.instance_type.clone(), sized.build()?.max_concurrency as f64)))
            .collect()
    }

    /// One row per type: build, accelerators, memory and concurrency, or why it does not fit.
    pub fn to_table(&self) -> String {
        use crate::text::{Align, Table};
        let mut out = format!("Sizing of {}\n", self.model);
        let mut table = Table::new(&[
            ("INSTANCE TYPE", Align::Left),
            ("TP", Align::Right),
            ("PRECISION", Align::Left),
            ("ACCELERATORS", Align::Right),
            ("CPU CORES", Align::Right),
            ("HOST MiB", Align::Right),
            ("WEIGHTS GiB/DEV", Align::Right),
            ("USABLE GiB/DEV", Align::Right),
            ("CONC/COPY", Align::Right),
            ("COPIES", Align::Right),
            ("MAX CONC", Align::Right),
            ("MODEL NAME / REASON", Align::Left),
        ]);
        for sized in &self.types {
            match &sized.outcome {
                Outcome::Fits(build) => table.row(vec![
                    sized.instance_type.clone(),
                    build.tensor_parallel_degree.to_string(),
                    build.precision.to_string(),
                    build.accelerators.to_string(),
                    build.cpu_cores.to_string(),
                    build.min_memory_mib.to_string(),
                    gib(u128::from(build.weight_bytes_per_device)),
                    gib(u128::from(build.usable_bytes_per_device)),
                    build.max_concurrency_per_copy.to_string(),
                    build.copies_per_instance.to_string(),
                    build.max_concurrency.to_string(),
                    build.model_name.clone(),
                ]),
                Outcome::DoesNotFit(reason) => {
                    let mut row = vec![sized.instance_type.clone()];
                    row.extend(std::iter::repeat_n("-".to_string(), 10));
                    row.push(format!("does not fit: {reason}"));
                    table.row(row);
                }
            }
        }
        out.push_str(&table.render("  "));
        out
    }
}

/// Bytes as GiB with one decimal, for messages and tables only (the arithmetic stays exact).
fn gib(bytes: u128) -> String {
    format!("{:.1}", bytes as f64 / GIB as f64)
}

/// The whole number an `f64` holds, if it is one in `[0, max]`.
fn whole(value: f64, max: u64) -> Option<u64> {
    (value.is_finite() && value.fract() == 0.0 && value >= 0.0 && value <= max as f64).then_some(value as u64)
}

/// One instance type's shape in integers.
struct Shape {
    accelerators: u64,
    device_bytes: u128,
    milli_cpus: u128,
    memory_mib: u128,
}

impl Shape {
    /// The shape, or why the type cannot be sized at all.
    fn of(spec: &InstanceTypeSpec) -> Result<Shape, String> {
        let shown = crate::problem::number_text;
        let accelerators = whole(f64::from(spec.accelerator_count), MAX_ACCELERATORS).ok_or_else(|| {
            format!("AcceleratorCount {} is not a whole number of devices", shown(f64::from(spec.accelerator_count)))
        })?;
        if accelerators == 0 {
            return Err("the type has no accelerators".to_string());
        }
        let gib_per_device = spec.accelerator_memory_gib;
        if !(gib_per_device.is_finite() && gib_per_device > 0.0) {
            return Err(format!("AcceleratorMemoryGiB is {} (not given or not positive)", shown(gib_per_device)));
        }
        let finite_or_zero = |value: f64| if value.is_finite() && value > 0.0 { value } else { 0.0 };
        Ok(Shape {
            accelerators,
            // Capped at 2^40 GiB so later products stay far inside u128.
            device_bytes: (gib_per_device.min(MAX_DEVICE_GIB) * GIB as f64).floor() as u128,
            milli_cpus: (finite_or_zero(spec.v_cpu_count) * 1000.0).floor() as u128,
            memory_mib: finite_or_zero(spec.memory_in_mb).floor() as u128,
        })
    }
}

/// Everything about one (precision, degree) attempt.
struct Attempt {
    weight_bytes: u128,
    weight_bytes_per_device: u128,
    kv_bytes_per_request_per_device: u128,
    usable_bytes_per_device: u128,
    host_mib: u128,
    cpu_cores: u128,
}

impl Attempt {
    fn new(model: &ModelDescription, shape: &Shape, precision: Precision, degree: u64) -> Attempt {
        let weight_bytes = precision.bytes(u128::from(model.parameter_count));
        let degree_wide = u128::from(degree);
        Attempt {
            weight_bytes,
            weight_bytes_per_device: weight_bytes.div_ceil(degree_wide),
            kv_bytes_per_request_per_device: model.kv_cache.bytes_per_token_per_device(degree)
                * u128::from(model.context_length),
            usable_bytes_per_device: shape.device_bytes * (PARTS_PER_MILLION - model.overhead_ppm())
                / PARTS_PER_MILLION,
            host_mib: (weight_bytes.div_ceil(MIB) + u128::from(model.host_memory_overhead_mib)).max(128),
            cpu_cores: degree_wide * u128::from(model.cpu_cores_per_accelerator),
        }
    }

    fn device_need(&self, concurrency: u64) -> u128 {
        self.weight_bytes_per_device + u128::from(concurrency) * self.kv_bytes_per_request_per_device
    }

    /// Why this attempt does not fit on `shape`, if it does not.
    fn problem(&self, model: &ModelDescription, shape: &Shape, precision: Precision, degree: u64) -> Option<String> {
        let need = self.device_need(model.target_concurrency);
        if need > self.usable_bytes_per_device {
            let percent = model.overhead_ppm() as f64 / 1e4;
            return Some(format!(
                "at {precision} with TP{degree} each device needs {} GiB ({} GiB weights + {} × {} GiB KV cache), \
                 {degree} × {} GiB gives {} GiB usable each ({percent}% overhead)",
                gib(need),
                gib(self.weight_bytes_per_device),
                model.target_concurrency,
                gib(self.kv_bytes_per_request_per_device),
                gib(shape.device_bytes),
                gib(self.usable_bytes_per_device),
            ));
        }
        if self.host_mib > shape.memory_mib {
            return Some(format!(
                "at {precision} a copy needs {} MiB of host memory, the instance has {} MiB",
                self.host_mib, shape.memory_mib
            ));
        }
        if self.cpu_cores * 1000 > shape.milli_cpus {
            return Some(format!(
                "with TP{degree} a copy needs {} CPU cores, the instance has {} vCPUs",
                self.cpu_cores,
                crate::problem::number_text(shape.milli_cpus as f64 / 1000.0)
            ));
        }
        None
    }

    fn build(&self, model: &ModelDescription, shape: &Shape, precision: Precision, degree: u64) -> Build {
        let spare = self.usable_bytes_per_device.saturating_sub(self.weight_bytes_per_device);
        let per_copy = spare.checked_div(self.kv_bytes_per_request_per_device).unwrap_or(0);
        let copies = (u128::from(shape.accelerators) / u128::from(degree))
            .min(shape.memory_mib.checked_div(self.host_mib).unwrap_or(0))
            .min(shape.milli_cpus.checked_div(self.cpu_cores * 1000).unwrap_or(u128::MAX));
        let narrow = |value: u128| u64::try_from(value).unwrap_or(u64::MAX);
        Build {
            tensor_parallel_degree: degree,
            precision,
            model_name: format!("{}-tp{degree}-{}", model.name, precision.slug()),
            accelerators: degree,
            cpu_cores: narrow(self.cpu_cores),
            min_memory_mib: narrow(self.host_mib),
            weight_bytes: narrow(self.weight_bytes),
            weight_bytes_per_device: narrow(self.weight_bytes_per_device),
            kv_bytes_per_request_per_device: narrow(self.kv_bytes_per_request_per_device),
            usable_bytes_per_device: narrow(self.usable_bytes_per_device),
            max_concurrency_per_copy: narrow(per_copy),
            copies_per_instance: narrow(copies),
            max_concurrency: narrow(per_copy.saturating_mul(copies)),
        }
    }
}

/// The tensor-parallel degrees allowed on `accelerators` devices: its divisors, ascending.
pub fn tensor_parallel_degrees(accelerators: u64) -> Vec<u64> {
    (1..=accelerators).filter(|degree| accelerators % degree == 0).collect()
}

/// The outcome for one type.
fn size_type(model: &ModelDescription, spec: &InstanceTypeSpec) -> Outcome {
    let shape = match Shape::of(spec) {
        Ok(shape) => shape,
        Err(reason) => return Outcome::DoesNotFit(reason),
    };
    let degrees = tensor_parallel_degrees(shape.accelerators);
    let mut last_problem = String::new();
    for &precision in &model.weight_precisions {
        for &degree in &degrees {
            let attempt = Attempt::new(model, &shape, precision, degree);
            match attempt.problem(model, &shape, precision, degree) {
                None => return Outcome::Fits(attempt.build(model, &shape, precision, degree)),
                // The last attempt (lowest precision, largest degree) has the most room: its
                // problem is the reason reported.
                Some(problem) => last_problem = problem,
            }
        }
    }
    Outcome::DoesNotFit(last_problem)
}

/// Sizes `model` on each of `types` (in the given order). Errors only for an invalid model
/// description; a type the model does not fit on is an [`Outcome::DoesNotFit`] with the reason.
pub fn size(model: &ModelDescription, types: &[InstanceTypeSpec]) -> Result<Sizing, ValidationError> {
    model.validate()?;
    Ok(Sizing {
        model: model.name.clone(),
        types: types
            .iter()
            .map(|spec| TypeSizing {
                instance_type: spec.instance_type.clone(),
                priority: None,
                accelerator_count: f64::from(spec.accelerator_count),
                accelerator_memory_gib: spec.accelerator_memory_gib,
                outcome: size_type(model, spec),
            })
            .collect(),
    })
}

/// Sizes `model` on the pool types of a validated scenario, in pool order, with their priorities.
pub fn size_pool(model: &ModelDescription, problem: &crate::Problem) -> Result<Sizing, ValidationError> {
    let pool: Vec<&crate::problem::InstanceTypeInfo> =
        problem.instance_types().iter().filter(|info| info.in_pool).collect();
    let specs: Vec<InstanceTypeSpec> = pool
        .iter()
        .map(|info| InstanceTypeSpec {
            instance_type: info.name.clone(),
            // Validated: at most 1024 devices.
            accelerator_count: u32::try_from(info.capacity.accelerators).unwrap_or(u32::MAX),
            accelerator_memory_gib: info.accelerator_memory_gib,
            v_cpu_count: info.capacity.milli_cpus as f64 / 1000.0,
            memory_in_mb: info.capacity.memory_mib as f64,
            hourly_price: info.hourly_price,
        })
        .collect();
    let mut sizing = size(model, &specs)?;
    for (sized, info) in sizing.types.iter_mut().zip(&pool) {
        sized.priority = Some(info.priority);
    }
    Ok(sizing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degrees_are_the_divisors() {
        assert_eq!(tensor_parallel_degrees(8), vec![1, 2, 4, 8]);
        assert_eq!(tensor_parallel_degrees(6), vec![1, 2, 3, 6]);
        assert_eq!(tensor_parallel_degrees(0), Vec::<u64>::new());
    }

    #[test]
    fn kv_heads_are_never_split() {
        let kv = KvCache::Architecture { layers: 80, key_value_heads: 8, head_dim: 128, precision: Precision::Fp16 };
        assert_eq!(kv.bytes_per_token(), 327_680);
        assert_eq!(kv.bytes_per_token_per_device(8), 40_960);
        // 16 devices, 8 heads: each device still holds one whole head.
        assert_eq!(kv.bytes_per_token_per_device(16), 40_960);
        assert_eq!(KvCache::PerToken { bytes: 10 }.bytes_per_token_per_device(4), 3);
    }

    #[test]
    fn int4_rounds_odd_parameter_counts_up() {
        assert_eq!(Precision::Int4.bytes(3), 2);
        assert_eq!(Precision::Fp16.bytes(3), 6);
    }

    #[test]
    fn bad_shapes_are_reasons_not_panics() {
        let model = ModelDescription::new("m", 1000, vec![Precision::Fp16], KvCache::PerToken { bytes: 1 }, 1, 1);
        for (count, gib, expected) in [
            (2000, 24.0, "AcceleratorCount 2000 is not a whole number of devices"),
            (0, 24.0, "the type has no accelerators"),
            (1, 0.0, "AcceleratorMemoryGiB is 0 (not given or not positive)"),
            (1, -3.0, "AcceleratorMemoryGiB is -3 (not given or not positive)"),
        ] {
            let spec = InstanceTypeSpec {
                instance_type: "t".into(),
                accelerator_count: count,
                accelerator_memory_gib: gib,
                v_cpu_count: 8.0,
                memory_in_mb: 32768.0,
                hourly_price: None,
            };
            assert_eq!(size_type(&model, &spec), Outcome::DoesNotFit(expected.to_string()));
        }
    }
}
