//! Plans inputs at each documented size limit (docs/contract.md §1.4) and prints the time of
//! every phase that always runs, with the process's peak memory. Run each case in its own
//! process so the peak belongs to it:
//!
//! ```sh
//! cargo build --release --features examples --example size_limits
//! for case in components fleet min-instances azs single-model; do
//!     target/release/examples/size_limits $case
//! done
//! ```
//!
//! Not a test: timings depend on the machine (docs/benchmarks.md records them).

use std::time::{Duration, Instant};

use fleetplan::{verify, Consolidator, ExactPlanner, GreedyPlanner, Limits, Problem};
use fleetplan::{MAX_AVAILABILITY_ZONES, MAX_COMPONENTS, MAX_FLEET_INSTANCES, MAX_PLANNED_INSTANCES, MAX_TOTAL_COPIES};
use serde_json::{json, Value};

fn pool() -> Value {
    json!([{"InstanceType": "ml.p5.48xlarge", "Priority": 1}, {"InstanceType": "ml.g6.12xlarge", "Priority": 2}])
}

fn component(name: &str, copies: u64, index: usize) -> Value {
    json!({"InferenceComponentName": name, "RuntimeConfig": {"CopyCount": copies},
        "Specification": {"ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": 1 + index % 4, "NumberOfCpuCoresRequired": 2,
            "MinMemoryRequiredInMb": 16384},
            "SchedulingConfig": {"PlacementStrategy": if index % 2 == 0 { "SPREAD" } else { "BINPACK" },
                "AvailabilityZoneBalance": {"MaxImbalance": 1}}}})
}

fn zones(count: usize) -> Vec<String> {
    (0..count).map(|z| format!("az-{z}")).collect()
}

/// The scenario of one case, at its limit.
fn scenario(case: &str) -> Option<Value> {
    let endpoint = json!({"EndpointName": "e", "VariantName": "v", "InstancePools": pool()});
    Some(match case {
        // 2,000 components sharing 100,000 copies, empty fleet.
        "components" => {
            let per = MAX_TOTAL_COPIES / MAX_COMPONENTS as u64;
            json!({"AvailabilityZones": zones(3), "Endpoint": endpoint,
                "InferenceComponents": (0..MAX_COMPONENTS).map(|c| component(&format!("m{c}"), per, c)).collect::<Vec<_>>()})
        }
        // 100,000 fleet instances with one copy each, one copy too many of the model desired.
        "fleet" => {
            let z = zones(3);
            json!({"AvailabilityZones": z, "Endpoint": endpoint,
                "InferenceComponents": [component("m", MAX_FLEET_INSTANCES as u64 - 1, 0)],
                "Fleet": {
                    "Instances": (0..MAX_FLEET_INSTANCES).map(|i| json!({"InstanceId": format!("i-{i}"),
                        "InstanceType": "ml.g6.12xlarge", "AvailabilityZone": z[i % 3]})).collect::<Vec<_>>(),
                    "Copies": (0..MAX_FLEET_INSTANCES).map(|i| json!({"InferenceComponentName": "m",
                        "InstanceId": format!("i-{i}"), "CopyCount": 1})).collect::<Vec<_>>()}})
        }
        // MinInstanceCount 100,000 with a small model.
        "min-instances" => json!({"AvailabilityZones": zones(3),
            "Endpoint": {"EndpointName": "e", "VariantName": "v", "InstancePools": pool(),
                "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": MAX_PLANNED_INSTANCES}},
            "InferenceComponents": [component("m", 10, 0)]}),
        // 1,000 AZs, 50 components of 100 copies.
        "azs" => json!({"AvailabilityZones": zones(MAX_AVAILABILITY_ZONES), "Endpoint": endpoint,
            "InferenceComponents": (0..50).map(|c| component(&format!("m{c}"), 100, c)).collect::<Vec<_>>()}),
        // A single-model endpoint with DesiredInstanceCount 100,000.
        "single-model" => json!({"AvailabilityZones": zones(3),
            "Endpoint": {"EndpointName": "e", "VariantName": "v",
                "InstancePools": [{"InstanceType": "ml.g6.12xlarge", "Priority": 1}],
                "DesiredInstanceCount": MAX_PLANNED_INSTANCES}}),
        _ => return None,
    })
}

/// Peak resident memory of this process in MiB (Linux), if known.
fn peak_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn timed<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = work();
    println!("  {what:<34} {:>9.3} s", started.elapsed().as_secs_f64());
    result
}

fn main() {
    let case = std::env::args().nth(1).unwrap_or_else(|| "components".to_string());
    let Some(scenario) = scenario(&case) else {
        eprintln!("unknown case {case:?}: components, fleet, min-instances, azs or single-model");
        std::process::exit(2);
    };
    let text = scenario.to_string();
    println!("{case} ({} bytes of JSON)", text.len());
    let problem = match timed("read + validate", || Problem::from_json(&text)) {
        Ok(problem) => problem,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };
    let greedy =
        timed("greedy (first pass only)", || GreedyPlanner::new().limits(Limits::new().node_limit(1)).plan(&problem));
    timed("greedy (all passes)", || GreedyPlanner::new().plan(&problem));
    let violations = timed("verify", || verify(&problem, &greedy));
    assert!(violations.is_empty(), "{violations:?}");
    let (_, stats) = timed("exact, --time-limit-ms 1000", || {
        ExactPlanner::new().limits(Limits::new().time_limit(Duration::from_secs(1))).plan_with_stats(&problem)
    });
    if std::env::var_os("SIZE_LIMITS_STATS").is_some() {
        print!("{stats}");
    }
    timed("consolidate, --time-limit-ms 1000", || {
        Consolidator::new().limits(Limits::new().time_limit(Duration::from_secs(1))).plan(&problem)
    });
    println!("  placed {} copies; peak memory {} MiB", greedy.objective.placed_copies, peak_mib().unwrap_or(0));
}
