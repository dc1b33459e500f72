//! Passive vs active rebalancing, measured (docs/simulate.md, "Passive vs active"). Every script
//! runs with the platform's passive policy (no rebalancing: the planner alone, whose scale-in
//! removes fallback instances first and whose scale-out tries the preferred type again) and with
//! the `Rebalancer` every 1, 5 and 20 ticks. Printed: a Markdown table of time to preferred,
//! cost over the run, copy-ticks lost, copies moved and launches per script and policy, then
//! the totals per policy.
//!
//! ```text
//! cargo run --release --features examples --example passive_vs_active -- 3
//! ```
//!
//! Scripts: the shipped `ice-fallback-recovery.json` and `az-outage.json`, the small
//! `scenarios/simulations/` scripts written for this table, and for each seed 1..=N (default 3)
//! two generated ones over 3–4 AZs with SPREAD and BINPACK components (some balanced), launches
//! Pending for 2 ticks, and scale churn after the recovery:
//! - `outage-N`: the preferred type runs out in every AZ, then one AZ fails for 30 ticks (its
//!   copies go to fallback types elsewhere); the AZ and the preferred capacity come back together.
//! - `blocked-N`: the preferred type has no capacity for the first 30 ticks (the fleet is built on
//!   the fallbacks); then the block is lifted.

use std::collections::BTreeMap;

use fleetplan::{PlacementStrategy, Scenario, ScenarioBuilder, Script, SimulationSummary, Simulator};

const TICKS: u32 = 120;
const POLICIES: [(&str, u32); 4] = [("passive", 0), ("every 1", 1), ("every 5", 5), ("every 20", 20)];
const PREFERRED: &str = "ml.g6.48xlarge";
const AZS: [&str; 4] = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"];

/// xorshift64*: deterministic and dependency-free.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// 3–4 AZs; the preferred type and two fallbacks of 8 accelerators; 3–5 components of 1, 2 or
/// 4 accelerators per copy, half of them SPREAD, some with MaxImbalance 1.
fn scenario(rng: &mut Seeded) -> (Scenario, Vec<(String, u32)>) {
    let azs = &AZS[..3 + rng.below(2) as usize];
    let mut builder = ScenarioBuilder::new(azs.iter().copied())
        .pool(PREFERRED, 1)
        .pool("ml.g5.48xlarge", 2)
        .pool("ml.p4d.24xlarge", 3);
    let mut components = Vec::new();
    for index in 0..3 + rng.below(3) {
        let name = format!("model-{index}");
        let copies = 4 + rng.below(9) as u32;
        let accelerators = [1, 2, 4][rng.below(3) as usize];
        builder = builder.component(&name, copies, accelerators, 4.0, 16_384);
        if rng.below(2) == 0 {
            builder = builder.strategy(&name, PlacementStrategy::Spread);
        }
        if rng.below(3) == 0 {
            builder = builder.max_imbalance(&name, 1);
        }
        components.push((name, copies));
    }
    let scenario = builder.build().unwrap_or_else(|error| panic!("generated scenario: {error}"));
    (scenario, components)
}

/// After `from`, every 10 ticks each component goes down by 1–3 copies and back up 5 ticks
/// later: the passive policy's chances to shed fallback instances and retry the preferred type.
fn churn(mut script: Script, rng: &mut Seeded, components: &[(String, u32)], from: u32) -> Script {
    let mut tick = from + 5;
    while tick + 5 < TICKS {
        for (name, copies) in components {
            let down = (1 + rng.below(3) as u32).min(copies.saturating_sub(1));
            script = script.scale(tick, name, copies - down).scale(tick + 5, name, *copies);
        }
        tick += 10;
    }
    script
}

fn outage_script(seed: u64) -> Script {
    let mut rng = Seeded(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (scenario, components) = scenario(&mut rng);
    let azs = scenario.availability_zones.clone();
    let failing = azs[rng.below(azs.len() as u64) as usize].clone();
    let mut script = Script::new(scenario, TICKS).launch_ticks(2).az_outage(10, 40, &failing);
    for az in &azs {
        script = script.cloud_capacity(9, PREFERRED, az, Some(0)).cloud_capacity(40, PREFERRED, az, None);
    }
    churn(script, &mut rng, &components, 40)
}

fn blocked_script(seed: u64) -> Script {
    let mut rng = Seeded(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let (scenario, components) = scenario(&mut rng);
    let azs = scenario.availability_zones.clone();
    let mut script = Script::new(scenario, TICKS).launch_ticks(2);
    for az in &azs {
        script = script.cloud_capacity(0, PREFERRED, az, Some(0)).cloud_capacity(30, PREFERRED, az, None);
    }
    churn(script, &mut rng, &components, 30)
}

fn shipped(name: &str) -> Script {
    let path = format!("{}/scenarios/simulations/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    Script::from_json(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn main() {
    let seeds: u64 = std::env::args().nth(1).and_then(|seeds| seeds.parse().ok()).unwrap_or(3);
    let mut scripts: Vec<(String, Script)> = [
        "ice-fallback-recovery.json",
        "az-outage.json",
        "latency-blocked-then-lifted.json",
        "latency-outage-recovery.json",
    ]
    .iter()
    .map(|name| (name.trim_end_matches(".json").to_string(), shipped(name)))
    .collect();
    for seed in 1..=seeds {
        scripts.push((format!("outage-{seed}"), outage_script(seed)));
        scripts.push((format!("blocked-{seed}"), blocked_script(seed)));
    }
    println!("| script | policy | time to preferred (ticks) | cost (USD) | copy-ticks lost | moves | launches |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    // Per policy: (reached, sum of times to preferred, cost in millionths, copy-ticks, moves, launches).
    let mut totals: BTreeMap<usize, (u32, u64, i128, u64, u64, u64)> = BTreeMap::new();
    for (name, script) in &scripts {
        for (index, (policy, every)) in POLICIES.iter().enumerate() {
            let script = Script { rebalance_every: *every, ..script.clone() };
            let simulation = Simulator::new().run(&script).unwrap_or_else(|error| panic!("{name}: {error}"));
            if !simulation.failures.is_empty() {
                eprintln!("{name} ({policy}): invariants broke:\n{}", simulation.to_table());
            }
            let SimulationSummary { time_to_preferred, copy_ticks_lost, cost_hours_micros, moves, launches, .. } =
                simulation.summary;
            let total = totals.entry(index).or_default();
            if let Some(ticks) = time_to_preferred {
                total.0 += 1;
                total.1 += u64::from(ticks);
            }
            total.2 += cost_hours_micros;
            total.3 += copy_ticks_lost;
            total.4 += moves;
            total.5 += launches;
            let reached = time_to_preferred.map_or("never".to_string(), |ticks| ticks.to_string());
            println!(
                "| {name} | {policy} | {reached} | {:.2} | {copy_ticks_lost} | {moves} | {launches} |",
                cost_hours_micros as f64 / 1e6
            );
        }
    }
    println!();
    println!("| policy | reached preferred | mean time to preferred (ticks) | cost (USD) | copy-ticks lost | moves | launches |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (index, (policy, _)) in POLICIES.iter().enumerate() {
        let (reached, ticks, cost, lost, moves, launches) = totals.get(&index).copied().unwrap_or_default();
        let mean = if reached == 0 { "–".to_string() } else { format!("{:.1}", ticks as f64 / f64::from(reached)) };
        println!(
            "| {policy} | {reached} of {} | {mean} | {:.2} | {lost} | {moves} | {launches} |",
            scripts.len(),
            cost as f64 / 1e6
        );
    }
}
