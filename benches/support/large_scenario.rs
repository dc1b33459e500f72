//! Large generated scenarios for the greedy benchmark and the `greedy_large` example.
//!
//! Hundreds of components with mixed shapes (CPU-only, 1, 2 and 4 accelerators), SPREAD and
//! BINPACK, MaxImbalance 0/1 or none; 3 AZs; 5 pool types with prices; scarce priority-1
//! capacity with a reservation, so fallback happens. Deterministic: no randomness.

use fleetplan::{InstanceTypeSpec, Scenario, ScenarioBuilder};

/// Pool types: (name, priority, accelerators, vCPUs, memory MiB, price).
const POOL: &[(&str, u8, u32, u32, u32, f64)] = &[
    ("ml.p5.48xlarge", 1, 8, 192, 2_097_152, 113.07),
    ("ml.g6e.48xlarge", 2, 8, 192, 1_572_864, 30.13),
    ("ml.g6e.12xlarge", 3, 4, 48, 393_216, 10.49),
    ("ml.g6.12xlarge", 4, 4, 48, 196_608, 4.6),
    ("ml.g6.2xlarge", 5, 1, 8, 32_768, 0.98),
];

/// About `copies` copies spread over `components` components.
#[allow(dead_code)]
pub fn large_scenario(copies: u32, components: u32) -> Scenario {
    let azs = ["us-east-1a", "us-east-1b", "us-east-1c"];
    let mut builder = ScenarioBuilder::new(azs);
    for &(name, priority, accelerators, vcpus, memory, price) in POOL {
        builder = builder
            .instance_type(InstanceTypeSpec {
                instance_type: name.into(),
                accelerator_count: accelerators,
                accelerator_memory_gib: 24.0,
                v_cpu_count: f64::from(vcpus),
                memory_in_mb: f64::from(memory),
                hourly_price: Some(price),
            })
            .pool(name, priority);
    }
    // Priority 1 is scarce (and reserved in one AZ); the second choice runs out in one AZ.
    let scale = copies / 200 + 1;
    builder = builder
        .capacity("ml.p5.48xlarge", "us-east-1a", Some(scale), 0)
        .capacity("ml.p5.48xlarge", "us-east-1b", Some(0), 0)
        .capacity("ml.p5.48xlarge", "us-east-1c", Some(scale / 2), scale / 2 + 1)
        .capacity("ml.g6e.48xlarge", "us-east-1b", Some(scale * 2), 0);
    let accelerators = [1, 0, 1, 2, 0, 1, 4, 1];
    let cpus = [1.0, 2.0, 0.5, 4.0, 8.0];
    let memory = [8192, 16_384, 32_768, 65_536, 4096, 24_576];
    let base = copies / components.max(1);
    let mut left = copies;
    for c in 0..components {
        let i = c as usize;
        // Copy counts vary around the mean; the last component takes the rest.
        let count = if c + 1 == components { left } else { (base / 2 + (c * 7919) % (base + 1)).min(left) };
        left -= count;
        let name = format!("ic-{c:04}");
        builder = builder.component(&name, count, accelerators[i % 8], cpus[i % 5], memory[i % 6]);
        builder = match i % 3 {
            0 => builder.max_imbalance(&name, 0),
            1 => builder.max_imbalance(&name, 1),
            _ => builder,
        };
        if i % 4 == 0 {
            builder = builder.strategy(&name, fleetplan::PlacementStrategy::Binpack);
        }
    }
    builder.build().unwrap()
}
