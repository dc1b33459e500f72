//! Runs greedy and the exact planner on the stored vector-packing literature instances
//! (`benches/data/vbp/`, issue 11) and prints, per run, the known value, both instance counts,
//! the exact status, the bound's instance count and the times; then a summary per family and
//! overall: at the known value, within one bin of it, proven, mean gap, time. An `Optimal` whose
//! count differs from a known optimum (or beats a best known value) is flagged `FALSE-OPTIMAL`.
//!
//! ```sh
//! cargo run --release --features examples --example vbp_run -- [--ms N] [NAME-FILTER ...]
//! ```
//! `--ms` is the exact planner's time limit (default 10 000); filters keep runs whose name
//! contains any of them (e.g. `Triplet class7_40`).

use std::collections::BTreeMap;
use std::path::Path;

use fleetplan::{ExactPlanner, Problem, Status};

#[path = "../benches/support/literature.rs"]
mod literature;
#[path = "../benches/support/vbp.rs"]
mod vbp;
use literature::{bound_count, instance_count};

#[derive(Default)]
struct Totals {
    runs: u32,
    greedy_at_value: u32,
    greedy_within_one: u32,
    exact_at_value: u32,
    exact_within_one: u32,
    proven: u32,
    bound_at_value: u32,
    false_optimal: u32,
    invalid_plans: u32,
    greedy_gap_sum: f64,
    exact_gap_sum: f64,
    exact_seconds_sum: f64,
    exact_seconds_max: f64,
}

impl Totals {
    fn print_row(&self, name: &str) {
        let n = f64::from(self.runs.max(1));
        println!(
            "{:<8} {:>3} {:>8} {:>9} {:>8} {:>9} {:>6} {:>9} {:>9.1}% {:>8.1}% {:>7.2} {:>7.2} {:>9}{}",
            name,
            self.runs,
            self.greedy_at_value,
            self.greedy_within_one,
            self.exact_at_value,
            self.exact_within_one,
            self.proven,
            self.bound_at_value,
            100.0 * self.greedy_gap_sum / n,
            100.0 * self.exact_gap_sum / n,
            self.exact_seconds_sum / n,
            self.exact_seconds_max,
            self.false_optimal,
            if self.invalid_plans > 0 { format!("  {} INVALID", self.invalid_plans) } else { String::new() }
        );
    }
}

fn main() {
    let (time_limit, filters) = literature::arguments();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = vbp::known_values(root).unwrap_or_else(|e| panic!("{e}"));
    let exact = ExactPlanner::new().time_limit(time_limit);
    println!("exact time limit {} ms", time_limit.as_millis());
    println!(
        "{:<28} {:>4} {:>5} {:>5} {:>6} {:>6} {:>6} {:<8} {:<9} {:>6} {:>8} {:>8}",
        "run", "dims", "items", "types", "known", "greedy", "exact", "status", "stop", "bound", "greedy_s", "exact_s"
    );
    let mut totals: BTreeMap<String, Totals> = BTreeMap::new();
    let mut all = Totals::default();
    for run in known.iter().filter(|run| filters.is_empty() || filters.iter().any(|f| run.name.contains(f))) {
        let instance = run.instance().unwrap_or_else(|e| panic!("{e}"));
        let scenario = instance.scenario().unwrap_or_else(|e| panic!("{e}"));
        let problem = Problem::new(&scenario).unwrap_or_else(|e| panic!("{}: {e}", run.name));

        let items = instance.item_count();
        let literature::Runs { greedy: greedy_plan, greedy_seconds, exact: exact_plan, exact_seconds, invalid } =
            literature::run(&problem, items, &exact);
        let greedy_count = instance_count(&greedy_plan.objective);
        let exact_count = instance_count(&exact_plan.objective);
        let bound = bound_count(&exact_plan);
        let false_optimal = exact_plan.status == Status::Optimal
            && match run.kind {
                vbp::ValueKind::Optimum => exact_count != run.value,
                vbp::ValueKind::BestKnown => exact_count > run.value,
            };
        let below_optimum = run.kind == vbp::ValueKind::Optimum && exact_count.min(greedy_count) < run.value;
        let bound_above_optimum = run.kind == vbp::ValueKind::Optimum && bound.is_some_and(|b| b > run.value);
        let flags = literature::flags(false_optimal, below_optimum, bound_above_optimum, invalid);
        println!(
            "{:<28} {:>4} {:>5} {:>5} {:>6} {:>6} {:>6} {:<8} {:<9} {:>6} {:>8.3} {:>8.3} {}",
            run.name,
            run.dimensions,
            items,
            instance.multiplicities().len(),
            run.value,
            greedy_count,
            exact_count,
            format!("{:?}", exact_plan.status),
            format!("{:?}", exact_plan.stop_reason),
            bound.map_or("-".to_string(), |b| b.to_string()),
            greedy_seconds,
            exact_seconds,
            flags.join(" ")
        );

        let gap = |count: u32| f64::from(count.saturating_sub(run.value)) / f64::from(run.value);
        for family in [totals.entry(vbp::family(&run.name)).or_default(), &mut all] {
            family.runs += 1;
            family.greedy_at_value += u32::from(greedy_count <= run.value);
            family.greedy_within_one += u32::from(greedy_count <= run.value + 1);
            family.exact_at_value += u32::from(exact_count <= run.value);
            family.exact_within_one += u32::from(exact_count <= run.value + 1);
            family.proven += u32::from(exact_plan.status == Status::Optimal);
            family.bound_at_value += u32::from(bound == Some(run.value));
            family.false_optimal += u32::from(false_optimal);
            family.invalid_plans += u32::from(invalid);
            family.greedy_gap_sum += gap(greedy_count);
            family.exact_gap_sum += gap(exact_count);
            family.exact_seconds_sum += exact_seconds;
            family.exact_seconds_max = family.exact_seconds_max.max(exact_seconds);
        }
    }

    println!();
    println!(
        "{:<8} {:>3} {:>8} {:>9} {:>8} {:>9} {:>6} {:>9} {:>10} {:>9} {:>7} {:>7} {:>9}",
        "family",
        "n",
        "greedy=v",
        "greedy<=1",
        "exact=v",
        "exact<=1",
        "proven",
        "bound=v",
        "gap_greedy",
        "gap_exact",
        "mean_s",
        "max_s",
        "false_opt"
    );
    for (name, family) in &totals {
        family.print_row(name);
    }
    all.print_row("all");
}
