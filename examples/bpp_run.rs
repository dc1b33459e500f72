//! Runs greedy and the exact planner on the stored bin-packing literature instances
//! (`benches/data/bpp/`, issue 11) and prints, per instance, the known optimum, both instance
//! counts, the exact status, the bound's instance count and the times; then a summary per
//! family. A `Optimal` whose count differs from the known optimum is flagged `FALSE-OPTIMAL`.
//!
//! ```sh
//! cargo run --release --features examples --example bpp_run -- [--ms N] [NAME-FILTER ...]
//! ```
//! `--ms` is the exact planner's time limit (default 10 000); filters keep instances whose name
//! contains any of them (e.g. `t60 u120_0`).

use std::collections::BTreeMap;
use std::path::Path;

use fleetplan::{ExactPlanner, Problem, Status};

#[path = "../benches/support/bpp.rs"]
mod bpp;
#[path = "../benches/support/literature.rs"]
mod literature;
use literature::{bound_count, instance_count};

#[derive(Default)]
struct FamilyTotals {
    instances: u32,
    greedy_at_optimum: u32,
    exact_at_optimum: u32,
    proven: u32,
    exact_equals_greedy: u32,
    with_bound: u32,
    bound_at_optimum: u32,
    false_optimal: u32,
    invalid_plans: u32,
    greedy_gap_sum: f64,
    exact_gap_sum: f64,
    exact_seconds_sum: f64,
    exact_seconds_max: f64,
}

fn main() {
    let (time_limit, filters) = literature::arguments();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let optima = bpp::known_optima(root).unwrap_or_else(|e| panic!("{e}"));
    let exact = ExactPlanner::new().time_limit(time_limit);
    println!("exact time limit {} ms", time_limit.as_millis());
    println!(
        "{:<20} {:>5} {:>5} {:>6} {:>6} {:>6} {:<8} {:<9} {:>6} {:>8} {:>8}",
        "instance", "items", "sizes", "opt", "greedy", "exact", "status", "stop", "bound", "greedy_s", "exact_s"
    );
    let mut totals: BTreeMap<String, FamilyTotals> = BTreeMap::new();
    for known in optima.iter().filter(|known| filters.is_empty() || filters.iter().any(|f| known.name.contains(f))) {
        let instance = bpp::BppInstance::read(&known.path).unwrap_or_else(|e| panic!("{e}"));
        let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{}: {e}", known.name));

        let items = instance.sizes.len() as u64;
        let literature::Runs { greedy: greedy_plan, greedy_seconds, exact: exact_plan, exact_seconds, invalid } =
            literature::run(&problem, items, &exact);
        let greedy_count = instance_count(&greedy_plan.objective);
        let exact_count = instance_count(&exact_plan.objective);
        let bound = bound_count(&exact_plan);
        let false_optimal = exact_plan.status == Status::Optimal && exact_count != known.optimum;
        let bound_above_optimum = bound.is_some_and(|b| b > known.optimum);
        let flags = literature::flags(false_optimal, false, bound_above_optimum, invalid);
        println!(
            "{:<20} {:>5} {:>5} {:>6} {:>6} {:>6} {:<8} {:<9} {:>6} {:>8.3} {:>8.3} {}",
            known.name,
            items,
            instance.multiplicities().len(),
            known.optimum,
            greedy_count,
            exact_count,
            format!("{:?}", exact_plan.status),
            format!("{:?}", exact_plan.stop_reason),
            bound.map_or("-".to_string(), |b| b.to_string()),
            greedy_seconds,
            exact_seconds,
            flags.join(" ")
        );

        let family = totals.entry(bpp::family(&known.name).to_string()).or_default();
        let gap = |count: u32| f64::from(count.saturating_sub(known.optimum)) / f64::from(known.optimum);
        family.instances += 1;
        family.greedy_at_optimum += u32::from(greedy_count == known.optimum);
        family.exact_at_optimum += u32::from(exact_count == known.optimum);
        family.proven += u32::from(exact_plan.status == Status::Optimal);
        family.exact_equals_greedy += u32::from(exact_count == greedy_count);
        family.with_bound += u32::from(bound.is_some());
        family.bound_at_optimum += u32::from(bound == Some(known.optimum));
        family.false_optimal += u32::from(false_optimal);
        family.invalid_plans += u32::from(invalid);
        family.greedy_gap_sum += gap(greedy_count);
        family.exact_gap_sum += gap(exact_count);
        family.exact_seconds_sum += exact_seconds;
        family.exact_seconds_max = family.exact_seconds_max.max(exact_seconds);
    }

    println!();
    println!(
        "{:<6} {:>3} {:>9} {:>8} {:>6} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8} {:>7}",
        "family",
        "n",
        "greedy=opt",
        "exact=opt",
        "proven",
        "exact=greedy",
        "has_bound",
        "bound=opt",
        "gap_greedy",
        "gap_exact",
        "mean_s",
        "max_s",
        "false_opt"
    );
    for (name, family) in &totals {
        let n = f64::from(family.instances);
        println!(
            "{:<6} {:>3} {:>10} {:>9} {:>6} {:>12} {:>9} {:>10} {:>9.1}% {:>8.1}% {:>8.2} {:>8.2} {:>7}{}",
            name,
            family.instances,
            family.greedy_at_optimum,
            family.exact_at_optimum,
            family.proven,
            family.exact_equals_greedy,
            family.with_bound,
            family.bound_at_optimum,
            100.0 * family.greedy_gap_sum / n,
            100.0 * family.exact_gap_sum / n,
            family.exact_seconds_sum / n,
            family.exact_seconds_max,
            family.false_optimal,
            if family.invalid_plans > 0 { format!("  {} INVALID", family.invalid_plans) } else { String::new() }
        );
    }
}
