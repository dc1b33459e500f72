//! Per-type model configurations (`fleetplan::sizing`, `fleetplan size`): hand-checked builds,
//! the choice rule and its monotonicity, model-file errors, and the emitted specifications
//! planned end to end through the binary. Needs the `cli` feature (it runs the binary).
#![cfg(feature = "cli")]

use std::process::{Command, Output};

use fleetplan::sizing::{size, size_pool, KvCache, ModelDescription, Outcome, Precision, Sizing};
use fleetplan::{InstanceTypeSpec, Problem};
use proptest::prelude::*;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fleetplan");
const LLAMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/models/llama-70b.json");

/// A pool of the three shapes of the issue: 8×80 GiB, 4×24 GiB, 1×24 GiB.
const POOL: &str = r#"{
  "AvailabilityZones": ["us-east-1a", "us-east-1b"],
  "Endpoint": {"EndpointName": "llm", "InstancePools": [
    {"InstanceType": "ml.p5.48xlarge", "Priority": 1},
    {"InstanceType": "ml.g6.12xlarge", "Priority": 2},
    {"InstanceType": "ml.g6.2xlarge", "Priority": 3}]}
}"#;

fn llama() -> ModelDescription {
    ModelDescription::from_json(&std::fs::read_to_string(LLAMA).unwrap()).unwrap()
}

fn shape(name: &str, accelerators: u32, gib: f64, vcpus: u32, memory_mib: u32) -> InstanceTypeSpec {
    InstanceTypeSpec {
        instance_type: name.into(),
        accelerator_count: accelerators,
        accelerator_memory_gib: gib,
        v_cpu_count: f64::from(vcpus),
        memory_in_mb: f64::from(memory_mib),
        hourly_price: None,
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the fleetplan binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

use crate::common::TempFile;

// The model of scenarios/models/llama-70b.json: 70e9 parameters; KV cache from 80 layers, 8 KV
// heads, head dim 128 at FP16 = 2 × 80 × 8 × 128 × 2 = 327 680 bytes per token; 8192 tokens of
// context, 8 concurrent requests per copy, 10% of each device kept back.

#[test]
fn llama_70b_on_8x80_gib_is_fp16_on_four_devices() {
    let sizing = size(&llama(), &[shape("ml.p5.48xlarge", 8, 80.0, 192, 2_097_152)]).unwrap();
    let build = sizing.types[0].build().expect("fits");
    // usable = 80 × 2^30 × 0.9 = 77 309 411 328 bytes per device.
    // FP16 weights 140e9 bytes. TP1: 140e9 > usable. TP2: 70e9 + 8 × (4 heads: 163 840 B/token ×
    // 8192 = 1 342 177 280) = 80 737 418 240 > usable. TP4: 35e9 + 8 × 671 088 640 =
    // 40 368 709 120 ≤ usable: fits.
    assert_eq!((build.precision, build.tensor_parallel_degree, build.accelerators), (Precision::Fp16, 4, 4));
    assert_eq!(build.model_name, "llama-70b-tp4-fp16");
    assert_eq!(build.usable_bytes_per_device, 77_309_411_328);
    assert_eq!(build.weight_bytes_per_device, 35_000_000_000);
    assert_eq!(build.kv_bytes_per_request_per_device, 671_088_640);
    // (77 309 411 328 − 35e9) / 671 088 640 = 63.04 → 63 requests per copy.
    assert_eq!(build.max_concurrency_per_copy, 63);
    // Host: ceil(140e9 / 2^20) = 133 515 MiB + 4096 = 137 611 MiB; CPU 4 × 2 = 8 cores.
    assert_eq!((build.min_memory_mib, build.cpu_cores), (137_611, 8));
    // Copies: min(8 / 4, 2 097 152 / 137 611 = 15, 192 / 8 = 24) = 2; 2 × 63 = 126 per instance.
    assert_eq!((build.copies_per_instance, build.max_concurrency), (2, 126));
}

#[test]
fn llama_70b_on_4x24_gib_quantises_to_fp8_only() {
    let sizing = size(&llama(), &[shape("ml.g6.12xlarge", 4, 24.0, 48, 196_608)]).unwrap();
    let build = sizing.types[0].build().expect("fits");
    // usable = floor(24 × 2^30 × 0.9) = 23 192 823 398. FP16 at TP4: 35e9 weights alone exceed
    // it. FP8 (70e9 bytes): TP1 70e9, TP2 35e9 exceed it; TP4: 17.5e9 + 8 × 671 088 640 =
    // 22 868 709 120 ≤ 23 192 823 398: fits, so INT4 is not used.
    assert_eq!((build.precision, build.tensor_parallel_degree), (Precision::Fp8, 4));
    assert_eq!(build.model_name, "llama-70b-tp4-fp8");
    assert_eq!(build.usable_bytes_per_device, 23_192_823_398);
    // (23 192 823 398 − 17.5e9) / 671 088 640 = 8.48 → 8.
    assert_eq!(build.max_concurrency_per_copy, 8);
    // Host: ceil(70e9 / 2^20) = 66 758 + 4096 = 70 854 MiB; one copy uses all 4 devices.
    assert_eq!((build.min_memory_mib, build.copies_per_instance, build.max_concurrency), (70_854, 1, 8));
}

#[test]
fn llama_70b_does_not_fit_on_1x24_gib_and_says_why() {
    let sizing = size(&llama(), &[shape("ml.g6.2xlarge", 1, 24.0, 8, 32_768)]).unwrap();
    // INT4 at TP1 (the most room there is): 35e9 bytes of weights (32.6 GiB) + 8 × 2.5 GiB of
    // KV cache = 52.6 GiB against 21.6 GiB usable.
    assert_eq!(
        sizing.types[0].outcome,
        Outcome::DoesNotFit(
            "at INT4 with TP1 each device needs 52.6 GiB (32.6 GiB weights + 8 × 2.5 GiB KV cache), \
             1 × 24.0 GiB gives 21.6 GiB usable each (10% overhead)"
                .to_string()
        )
    );
    assert!(sizing.specifications().is_empty());
    assert!(sizing.max_concurrency().is_empty());
}

#[test]
fn host_memory_and_cpu_limits_are_reasons_too() {
    let mut model =
        ModelDescription::new("small", 1_000_000_000, vec![Precision::Fp16], KvCache::PerToken { bytes: 1 }, 1, 1);
    model.cpu_cores_per_accelerator = 8;
    let sizing = size(&model, &[shape("tiny-host", 1, 80.0, 64, 2048), shape("few-cpus", 1, 80.0, 4, 65_536)]).unwrap();
    // Host: ceil(2e9 / 2^20) = 1908 + 4096 = 6004 MiB.
    assert_eq!(
        sizing.types[0].outcome,
        Outcome::DoesNotFit("at FP16 a copy needs 6004 MiB of host memory, the instance has 2048 MiB".into())
    );
    assert_eq!(
        sizing.types[1].outcome,
        Outcome::DoesNotFit("with TP1 a copy needs 8 CPU cores, the instance has 4 vCPUs".into())
    );
}

/// More accelerator memory can mean more accelerators: the rule prefers a higher precision at
/// any degree to a quantised build on fewer devices. So monotonicity in accelerators holds per
/// precision, and across precisions only for the (precision, degree) order (properties below).
#[test]
fn more_memory_may_use_more_devices_to_avoid_quantising() {
    let mut model = ModelDescription::new(
        "m",
        40_000_000_000,
        vec![Precision::Fp16, Precision::Int4],
        KvCache::PerToken { bytes: 1000 },
        1000,
        1,
    );
    model.overhead_fraction = 0.0;
    // KV cache: 1000 bytes × 1000 tokens = 1e6 bytes per request, divided by the degree.
    // 6 × 8 GiB (8 589 934 592 bytes each): FP16 (80e9 bytes) needs 13.3e9 per device even at
    // TP6; INT4 (20e9 bytes) at TP3 needs 6 666 666 667 + 333 334 bytes: INT4 on 3 devices.
    let small = size(&model, &[shape("six-by-8", 6, 8.0, 96, 393_216)]).unwrap();
    let small = small.types[0].build().unwrap();
    assert_eq!((small.precision, small.accelerators), (Precision::Int4, 3));
    // 6 × 16 GiB (17 179 869 184 bytes each): FP16 at TP3 needs 26.7e9 (no), at TP6 13.3e9
    // (yes): FP16 on 6 devices, more than the 3 of the smaller type.
    let medium = size(&model, &[shape("six-by-16", 6, 16.0, 96, 393_216)]).unwrap();
    let medium = medium.types[0].build().unwrap();
    assert_eq!((medium.precision, medium.accelerators), (Precision::Fp16, 6));
}

#[test]
fn the_pool_table_matches_the_snapshot_and_the_cli() {
    let problem = Problem::from_json(POOL).unwrap();
    let sizing = size_pool(&llama(), &problem).unwrap();
    insta::assert_snapshot!("llama_70b_pool_table", sizing.to_table());
    let pool = TempFile::new("pool.json", POOL);
    let output = run(&["size", LLAMA, pool.path()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), sizing.to_table());
}

/// The per-instance maximum is the `MaxConcurrency` weighted utilisation divides by.
#[test]
fn max_concurrency_feeds_weighted_utilisation() {
    use fleetplan::metrics::{utilisation, TypeLoad};
    let sizing = size_pool(&llama(), &Problem::from_json(POOL).unwrap()).unwrap();
    let max = sizing.max_concurrency();
    assert_eq!(max.len(), 2, "{max:?}");
    // Two p5 at 63 requests each, one g6.12xlarge at 4: (2 × 63 + 4) / (2 × 126 + 8) = 0.5.
    let loads = [
        TypeLoad::new("ml.p5.48xlarge", 2, 63.0, max["ml.p5.48xlarge"]),
        TypeLoad::new("ml.g6.12xlarge", 1, 4.0, max["ml.g6.12xlarge"]),
    ];
    assert_eq!(utilisation(&loads).unwrap().capacity_weighted, 0.5);
}

#[test]
fn emitted_specifications_load_and_plan_through_the_cli() {
    let pool = TempFile::new("plan-pool.json", POOL);
    let output = run(&["size", LLAMA, pool.path(), "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    // Keys in reading order (not sorted): the part to paste comes first.
    assert!(
        text(&output.stdout).starts_with(
            "{\n  \"Model\": \"llama-70b\",\n  \"Specifications\": [\n    {\n      \"InstanceType\": \"ml.p5.48xlarge\","
        ),
        "{}",
        text(&output.stdout)
    );
    let sized: Value = serde_json::from_str(&text(&output.stdout)).unwrap();
    assert_eq!(sized["MaxConcurrency"], serde_json::json!({"ml.p5.48xlarge": 126, "ml.g6.12xlarge": 8}));
    assert_eq!(
        sized["Specifications"][1],
        serde_json::json!({"InstanceType": "ml.g6.12xlarge", "ModelName": "llama-70b-tp4-fp8",
            "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 4,
                "NumberOfCpuCoresRequired": 8, "MinMemoryRequiredInMb": 70854}})
    );
    assert_eq!(sized["Types"][2]["Fits"], Value::Bool(false));

    // Paste: the pools with their overrides, the specifications into a component.
    let mut scenario: Value = serde_json::from_str(POOL).unwrap();
    scenario["Endpoint"]["InstancePools"] = sized["InstancePools"].clone();
    scenario["InferenceComponents"] = serde_json::json!([{
        "InferenceComponentName": "llm",
        "Specifications": sized["Specifications"].clone(),
        "RuntimeConfig": {"CopyCount": 4}
    }]);
    let scenario_text = scenario.to_string();
    let problem = Problem::from_json(&scenario_text).expect("the emitted specifications are a valid scenario");
    assert_eq!(problem.components()[0].requirements.iter().flatten().count(), 2);
    let file = TempFile::new("plan-scenario.json", &scenario_text);
    let planned = run(&["plan", file.path(), "--json"]);
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned.stderr));
    let plan: Value = serde_json::from_str(&text(&planned.stdout)).unwrap();
    assert_eq!(plan["Objective"]["PlacedCopies"], 4);
    let builds: Vec<&str> = plan["Actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|action| action["Type"] == "PlaceCopy")
        .map(|action| action["ModelName"].as_str().unwrap())
        .collect();
    assert_eq!(builds.len(), 4);
    assert!(builds.iter().all(|name| name.starts_with("llama-70b-tp4-")), "{builds:?}");
    let plan_file = TempFile::new("plan.json", &text(&planned.stdout));
    let verified = run(&["verify", file.path(), plan_file.path()]);
    assert_eq!(verified.status.code(), Some(0), "{}", text(&verified.stdout));
}

#[test]
fn a_bad_model_file_reports_every_problem_with_its_path() {
    let bad = r#"{"Name": "llama 70b", "ParameterCount": -5, "WeightPrecisions": ["FP16", "fp8", "FP16", "FP9"],
        "KvCache": {"Layers": 80, "HeadDim": "128"}, "ContextLength": 0, "TargetConcurrency": 1.5,
        "OverheadFraction": 1, "ContextLenght": 3}"#;
    let error = ModelDescription::from_json(bad).unwrap_err();
    let messages: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        vec![
            "ParameterCount: -5 is below the minimum 1",
            "WeightPrecisions[1]: unknown precision \"fp8\"; did you mean FP8?",
            "WeightPrecisions[2]: FP16 is listed twice",
            "WeightPrecisions[3]: unknown precision \"FP9\"; expected one of FP32, BF16, FP16, FP8, INT8, INT4",
            "KvCache.KeyValueHeads: is required",
            "KvCache.HeadDim: expected an integer, found \"128\"",
            "ContextLength: 0 is below the minimum 1",
            "TargetConcurrency: expected an integer, found 1.5",
            "OverheadFraction: 1 is outside [0, 1)",
            "ContextLenght: unknown key; did you mean ContextLength?",
            "Name: \"llama 70b\" is not a valid model name (letters, digits and '-', starting and ending with a \
             letter or digit)",
        ]
    );
}

#[test]
fn kv_cache_is_one_form_or_the_other() {
    let base = |kv: &str| {
        format!(
            r#"{{"Name": "m", "ParameterCount": 1000, "WeightPrecisions": ["FP16"], "KvCache": {kv},
                "ContextLength": 10, "TargetConcurrency": 1}}"#
        )
    };
    let message = |kv: &str| ModelDescription::from_json(&base(kv)).unwrap_err().to_string();
    assert_eq!(
        message(r#"{"BytesPerToken": 10, "Layers": 2}"#),
        "KvCache: give BytesPerToken or the architecture (Layers), not both"
    );
    assert_eq!(message("{}"), "KvCache: give BytesPerToken, or Layers, KeyValueHeads and HeadDim");
    assert_eq!(message(r#"{"BytesPerToken": 0}"#), "KvCache.BytesPerToken: 0 is below the minimum 1");
    assert_eq!(
        message(r#"{"BytesPerTokens": 10}"#).lines().next().unwrap(),
        "KvCache: give BytesPerToken, or Layers, KeyValueHeads and HeadDim"
    );
    assert!(message(r#"{"BytesPerTokens": 10}"#)
        .ends_with("KvCache.BytesPerTokens: unknown key; did you mean BytesPerToken?"));
    let model = ModelDescription::from_json(&base(r#"{"BytesPerToken": 10}"#)).unwrap();
    assert_eq!(model.kv_cache, KvCache::PerToken { bytes: 10 });
    assert_eq!(model.overhead_fraction, fleetplan::sizing::DEFAULT_OVERHEAD_FRACTION);
    assert!(ModelDescription::from_json("{").unwrap_err().to_string().starts_with("malformed JSON"));
    assert_eq!(ModelDescription::from_json("[]").unwrap_err().to_string(), "expected an object, found []");
}

#[test]
fn a_model_built_in_code_is_checked_the_same_way() {
    let model = ModelDescription::new("", 0, vec![], KvCache::PerToken { bytes: 0 }, 0, 0);
    let messages: Vec<String> = model.validate().unwrap_err().issues().iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        vec![
            "Name: is empty",
            "ParameterCount: 0 is below the minimum 1",
            "ContextLength: 0 is below the minimum 1",
            "TargetConcurrency: 0 is below the minimum 1",
            "KvCache.BytesPerToken: 0 is below the minimum 1",
            "WeightPrecisions: at least one precision is required",
        ]
    );
    let mut nan = llama();
    nan.overhead_fraction = f64::NAN;
    assert_eq!(size(&nan, &[]).unwrap_err().to_string(), "OverheadFraction: NaN is not a number");
}

#[test]
fn the_cli_names_the_bad_model_file() {
    let bad = TempFile::new("bad-model.json", r#"{"Name": "m"}"#);
    let pool = TempFile::new("bad-model-pool.json", POOL);
    let output = run(&["size", bad.path(), pool.path()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "{}: not a valid model description:\nParameterCount: is required\nWeightPrecisions: is required\n\
             KvCache: is required\nContextLength: is required\nTargetConcurrency: is required\n",
            bad.path()
        )
    );
    assert_eq!(run(&["size", "-", "-"]).status.code(), Some(2));
}

// --- Properties -------------------------------------------------------------------------------

/// The order the rule minimises: fits before not, then precision rank, then degree.
fn key(model: &ModelDescription, sizing: &Sizing) -> (u8, usize, u64) {
    match sizing.types[0].build() {
        Some(build) => {
            let rank = model.weight_precisions.iter().position(|p| *p == build.precision).unwrap_or(usize::MAX);
            (0, rank, build.tensor_parallel_degree)
        }
        None => (1, 0, 0),
    }
}

fn size_one(model: &ModelDescription, spec: &InstanceTypeSpec) -> Sizing {
    size(model, std::slice::from_ref(spec)).unwrap()
}

/// The contract of docs/sizing.md written out independently: does `precision` at degree `t` fit?
fn oracle_fits(model: &ModelDescription, spec: &InstanceTypeSpec, precision: Precision, t: u64) -> bool {
    let t128 = u128::from(t);
    let device = (spec.accelerator_memory_gib * 1_073_741_824.0) as u128;
    let usable = device * (1_000_000 - (model.overhead_fraction * 1e6).round() as u128) / 1_000_000;
    let weights = (u128::from(model.parameter_count) * u128::from(precision.bits())).div_ceil(8);
    let per_token = match model.kv_cache {
        KvCache::PerToken { bytes } => u128::from(bytes).div_ceil(t128),
        KvCache::Architecture { layers, key_value_heads, head_dim, precision } => {
            let values = 2 * u128::from(layers) * u128::from(key_value_heads).div_ceil(t128) * u128::from(head_dim);
            (values * u128::from(precision.bits())).div_ceil(8)
        }
    };
    let need =
        weights.div_ceil(t128) + u128::from(model.target_concurrency) * per_token * u128::from(model.context_length);
    let host_mib = (weights.div_ceil(1 << 20) + u128::from(model.host_memory_overhead_mib)).max(128);
    need <= usable
        && host_mib <= spec.memory_in_mb as u128
        && t * model.cpu_cores_per_accelerator <= spec.v_cpu_count as u64
}

fn precisions() -> impl Strategy<Value = Vec<Precision>> {
    proptest::sample::subsequence(Precision::ALL.to_vec(), 1..=3).prop_shuffle()
}

fn kv_cache() -> impl Strategy<Value = KvCache> {
    prop_oneof![
        (1u64..2_000_000).prop_map(|bytes| KvCache::PerToken { bytes }),
        (1u64..128, 1u64..64, prop::sample::select(vec![64u64, 128, 256])).prop_map(
            |(layers, key_value_heads, head_dim)| KvCache::Architecture {
                layers,
                key_value_heads,
                head_dim,
                precision: Precision::Fp16
            }
        ),
    ]
}

fn model() -> impl Strategy<Value = ModelDescription> {
    (100_000_000u64..400_000_000_000, precisions(), kv_cache(), 1u64..32_768, 1u64..64, 0u32..50).prop_map(
        |(parameters, precisions, kv, context, concurrency, overhead_percent)| {
            let mut model = ModelDescription::new("m", parameters, precisions, kv, context, concurrency);
            model.overhead_fraction = f64::from(overhead_percent) / 100.0;
            model
        },
    )
}

fn instance() -> impl Strategy<Value = InstanceTypeSpec> {
    (
        prop::sample::select(vec![1u32, 2, 4, 6, 8, 12]),
        1u32..200,
        prop::sample::select(vec![4u32, 8, 48, 96, 192]),
        prop::sample::select(vec![16_384u32, 65_536, 196_608, 786_432, 2_097_152]),
    )
        .prop_map(|(accelerators, gib, vcpus, memory)| shape("t", accelerators, f64::from(gib), vcpus, memory))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// More parameters never give a better (precision, degree): never a higher precision, and at
    /// the same precision never fewer accelerators; if the larger model fits, so does the smaller.
    #[test]
    fn more_parameters_never_need_less(model in model(), extra in 0u64..100_000_000_000, spec in instance()) {
        let mut bigger = model.clone();
        bigger.parameter_count += extra;
        let (small, large) = (size_one(&model, &spec), size_one(&bigger, &spec));
        prop_assert!(key(&model, &small) <= key(&bigger, &large));
        if model.weight_precisions.len() == 1 {
            if let (Some(a), Some(b)) = (small.types[0].build(), large.types[0].build()) {
                prop_assert!(a.accelerators <= b.accelerators);
            }
        }
    }

    /// More memory per device never gives a worse (precision, degree); with one precision, never
    /// more accelerators.
    #[test]
    fn more_accelerator_memory_never_needs_more(model in model(), spec in instance(), extra in 0u32..100) {
        let mut roomier = spec.clone();
        roomier.accelerator_memory_gib += f64::from(extra);
        let (tight, roomy) = (size_one(&model, &spec), size_one(&model, &roomier));
        prop_assert!(key(&model, &roomy) <= key(&model, &tight));
        if model.weight_precisions.len() == 1 {
            if let (Some(a), Some(b)) = (tight.types[0].build(), roomy.types[0].build()) {
                prop_assert!(b.accelerators <= a.accelerators);
            }
        }
    }

    /// A higher target concurrency never gives a better (precision, degree).
    #[test]
    fn higher_concurrency_never_needs_less(model in model(), spec in instance(), extra in 0u64..64) {
        let mut busier = model.clone();
        busier.target_concurrency += extra;
        let (calm, busy) = (size_one(&model, &spec), size_one(&busier, &spec));
        prop_assert!(key(&model, &calm) <= key(&busier, &busy));
        if model.weight_precisions.len() == 1 {
            if let (Some(a), Some(b)) = (calm.types[0].build(), busy.types[0].build()) {
                prop_assert!(a.accelerators <= b.accelerators);
            }
        }
    }

    /// The choice is the first fit in (precision order, ascending divisor) by the independent
    /// oracle above, and the build's numbers are consistent with it.
    #[test]
    fn the_choice_is_the_first_fit(model in model(), spec in instance()) {
        let sizing = size_one(&model, &spec);
        let accelerators = spec.accelerator_count as u64;
        let expected = model.weight_precisions.iter().find_map(|&precision| {
            fleetplan::sizing::tensor_parallel_degrees(accelerators)
                .into_iter()
                .find(|&t| oracle_fits(&model, &spec, precision, t))
                .map(|t| (precision, t))
        });
        let build = sizing.types[0].build();
        prop_assert_eq!(build.map(|b| (b.precision, b.tensor_parallel_degree)), expected);
        if let Some(build) = build {
            prop_assert!(build.max_concurrency_per_copy >= model.target_concurrency);
            prop_assert!(build.weight_bytes_per_device + model.target_concurrency * build.kv_bytes_per_request_per_device
                <= build.usable_bytes_per_device);
            prop_assert!(build.copies_per_instance >= 1);
            prop_assert_eq!(build.max_concurrency, build.copies_per_instance * build.max_concurrency_per_copy);
        }
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        prop::sample::select(vec![0.0, -0.0, 0.5, 1.0, 1e15, 1e16, 1e300, -1.0, 0.999_999_9]).prop_map(Value::from),
        "[A-Za-z0-9 -]{0,12}".prop_map(Value::from),
        prop::sample::select(vec!["FP16", "fp16", "INT4", "FP9", ""]).prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["BytesPerToken", "Layers", "KeyValueHeads", "HeadDim", "Precision", "X"]),
                inner,
                0..4
            )
            .prop_map(|map| Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

fn any_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 0.0, 0.5, 1e300, 2e12]),
        0.0f64..2000.0,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any value under any key of a model file is an error with a path or a model, never a
    /// panic; a model that reads also sizes without panicking on any instance shape, and a
    /// rejected file never yields an empty message.
    #[test]
    fn no_model_file_or_shape_panics(
        key in prop::sample::select(vec![
            "Name", "ParameterCount", "WeightPrecisions", "KvCache", "ContextLength", "TargetConcurrency",
            "OverheadFraction", "HostMemoryOverheadMiB", "CpuCoresPerAccelerator", "Extra",
        ]),
        value in any_json(),
        shape in (any_number(), any_number(), any_number(), any_number()),
    ) {
        let mut document: Value = serde_json::from_str(&std::fs::read_to_string(LLAMA).unwrap()).unwrap();
        document[key] = value;
        match ModelDescription::from_json(&document.to_string()) {
            Ok(model) => {
                let spec = InstanceTypeSpec {
                    instance_type: "t".into(),
                    // Saturating: NaN and negatives become 0, huge values u32::MAX.
                    accelerator_count: shape.0 as u32,
                    accelerator_memory_gib: shape.1,
                    v_cpu_count: shape.2,
                    memory_in_mb: shape.3,
                    hourly_price: None,
                };
                let sizing = size_one(&model, &spec);
                let _ = (sizing.to_table(), sizing.to_json());
            }
            Err(error) => prop_assert!(error.issues().iter().all(|issue| !issue.message.is_empty())),
        }
    }

    /// Any field values built in code: validation errors or a sizing, never a panic (overflow
    /// included: tests run with debug assertions).
    #[test]
    fn no_model_built_in_code_panics(
        parameters in any::<u64>(),
        bytes in any::<u64>(),
        dims in (any::<u64>(), any::<u64>(), any::<u64>()),
        architecture in any::<bool>(),
        context in any::<u64>(),
        concurrency in any::<u64>(),
        host in any::<u64>(),
        cores in any::<u64>(),
        overhead in any_number(),
        memory in (any_number(), any_number()),
    ) {
        let kv = if architecture {
            KvCache::Architecture { layers: dims.0, key_value_heads: dims.1, head_dim: dims.2, precision: Precision::Fp32 }
        } else {
            KvCache::PerToken { bytes }
        };
        let _ = kv.bytes_per_token();
        let mut model = ModelDescription::new("m", parameters, Precision::ALL.to_vec(), kv, context, concurrency);
        model.host_memory_overhead_mib = host;
        model.cpu_cores_per_accelerator = cores;
        model.overhead_fraction = overhead / 1000.0;
        let spec = shape("t", 8, memory.0, 192, 2_097_152);
        let _ = size(&model, &[InstanceTypeSpec { memory_in_mb: memory.1, ..spec }]);
    }
}
