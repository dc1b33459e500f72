//! The `fleetplan` command line (docs/contract.md §5).
//!
//! ```text
//! fleetplan plan SCENARIO [--solver greedy|exact] [--time-limit-ms N] [--backend B] [--time-ladder] [--json] [--stats]
//! fleetplan consolidate SCENARIO [--time-limit-ms N] [--json] [--stats]
//! fleetplan report SCENARIO [--plan PLAN] [--json] [--svg FILE]
//! fleetplan verify SCENARIO PLAN [--json]
//! fleetplan rebalance SCENARIO [--time-limit-ms N] [--json]
//! fleetplan simulate SCRIPT [--time-limit-ms N] [--json] [--svg FILE]
//! fleetplan schema scenario|plan|plan-input
//! fleetplan size MODEL SCENARIO [--json]
//! fleetplan scaling-policy SCENARIO --max-concurrency TYPE=N... [--target F] [--namespace NS] [--metric-name NAME]
//! ```
//!
//! Every subcommand takes `--strict` (every unknown scenario key is an error).
//! `SCENARIO` (or `PLAN`, `SCRIPT`) may be `-` for standard input. Exit codes: 0 success (also
//! for a partial plan), 1 violations found by `verify` or a broken invariant in `simulate`, 2
//! bad input (validation messages, one per line, on standard error) or a file that cannot be
//! read or written.
//!
//! Standard output carries only the result (a table or JSON), so it can be piped; validation
//! warnings go to standard error, once, grouped by kind (`--quiet` drops them). The plan JSON
//! still lists every warning under `Warnings`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use fleetplan::__internal::{escape_text, validation_text, warnings_summary};
use fleetplan::{
    consolidation_table, plan_table, violations_table, Consolidator, ExactPlanner, FinalFleet, GreedyPlanner, Limits,
    Plan, Problem, ReadOptions, ReliabilityReport,
};

/// Exit code for success, including a partial plan.
const EXIT_OK: u8 = 0;
/// Exit code when `verify` finds violations.
const EXIT_VIOLATIONS: u8 = 1;
/// Exit code for bad input (invalid scenario or plan, unreadable file).
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(
    name = "fleetplan",
    version,
    about = "Plan where ML model replicas run on SageMaker-style instance pools",
    after_help = "The contract (every input key, the objective, the output, exit codes) is docs/contract.md; \
                  `fleetplan schema scenario|plan|plan-input` prints the JSON Schemas.\nResults go to standard output, \
                  warnings to standard error. Exit codes: 0 success, 1 violations found (verify) or an \
                  invariant broken (simulate), 2 bad input."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print no warnings on standard error (errors are still printed; the plan JSON keeps its
    /// `Warnings`).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Make every unknown key in the scenario an error (by default a key fleetplan does not
    /// read is a warning, and one that looks like a misspelt known key is an error).
    #[arg(long, global = true)]
    strict: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Reconcile the fleet to the desired copy counts (docs/contract.md §2).
    Plan {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Planning engine.
        #[arg(long, value_enum, default_value_t = Solver::Greedy)]
        solver: Solver,
        /// Deadline for the whole command, in milliseconds (reading, validating, warm start,
        /// solving, verifying). Default for `--solver exact`: 10000; 0 = no limit. A run that
        /// hits it says so (`Stop: time limit reached`) and returns its best verified plan.
        #[arg(long, value_name = "N")]
        time_limit_ms: Option<u64>,
        /// Integer-programming backend of the exact solver.
        #[arg(long, value_enum, default_value_t = Backend::Microlp)]
        backend: Backend,
        /// Exact solver: plan in one run under the whole limit. By default a limit over 1 s is
        /// planned in stages: the run a 1 s limit gets, then stages ending 10 s, 20 s, 40 s, … after
        /// the start, each from the best plan so far, so that a longer limit never gives a worse
        /// plan than a limit of 1 s or more (up to the machine's timing).
        #[arg(long)]
        single_run: bool,
        /// Exact solver: most threads the planner uses (default: two on a machine with two cores
        /// or more, else one). With two, the large-neighbourhood phase improves the warm start
        /// beside the search and runs on both threads after it; 1 keeps everything on one thread.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Print the plan as JSON (docs/contract.md §4) instead of a table.
        #[arg(long)]
        json: bool,
        /// Also print what the engine did (solver calls, nodes, time per phase) to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Move copies between existing instances so instances can be released (docs/contract.md §3).
    ///
    /// The table shows the objective of the current fleet (before) and of the final fleet (after).
    Consolidate {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Deadline for the whole command, in milliseconds (0 or absent = no limit). A run that
        /// hits it keeps the steps planned so far.
        #[arg(long, value_name = "N")]
        time_limit_ms: Option<u64>,
        /// Also print what the engine did to standard error.
        #[arg(long)]
        stats: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The reliability view: copies per AZ, blast radius, fleet composition (docs/contract.md §5).
    Report {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Report on the fleet this plan leads to (its actions applied to the scenario's fleet)
        /// instead of the current fleet. Plan JSON file, or `-` for standard input.
        #[arg(long, value_name = "PLAN")]
        plan: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write an SVG heat map (components × AZs) to this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Return to preferred hardware and replace several instances by one, in make-before-break
    /// steps (docs/contract.md §7).
    Rebalance {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Deadline for the whole command in milliseconds (default: the planner runs to the end
        /// and the best-reachable comparison gets 2000 ms).
        #[arg(long, value_name = "N")]
        time_limit_ms: Option<u64>,
        /// Print the plan as JSON (`{"Steps": [...], "Objective": {...}}`) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run a scripted fake cloud through the control loop, tick by tick, checking every
    /// invariant after every tick (docs/simulate.md); exit 1 if one breaks.
    ///
    /// The table shows per tick the instances by priority tier, the largest AZ imbalance, the
    /// cost, unplaced copies and what happened; then whether every check passed.
    Simulate {
        /// Simulation script JSON file, or `-` for standard input.
        script: String,
        /// Deadline for the whole command in milliseconds, checked before every tick: a run that
        /// reaches it stops there and says so (`stopped after N ticks: TimeLimit`); 0 or absent =
        /// no limit.
        #[arg(long, value_name = "N")]
        time_limit_ms: Option<u64>,
        /// Print the full per-tick record as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write an SVG chart of the instances by priority tier over time to this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Check a plan from any source against the scenario; exit 1 if it breaks a rule (docs/contract.md §5).
    Verify {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Plan JSON file (docs/contract.md §4), or `-` for standard input.
        plan: String,
        /// Print the violations as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Choose per pool type how a model runs (tensor-parallel degree, precision) and print the
    /// `Specifications` entries and per-instance maximum concurrency (docs/sizing.md).
    ///
    /// Types the model does not fit on are listed with the reason.
    Size {
        /// Model description JSON file (docs/sizing.md), or `-` for standard input.
        model: String,
        /// Scenario JSON file whose `Endpoint.InstancePools` are sized (shapes from the built-in
        /// catalogue and its `InstanceTypes`), or `-` for standard input.
        scenario: String,
        /// Print JSON (`Specifications`, `InstancePools`, `MaxConcurrency`, `Types`) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the Application Auto Scaling `PutScalingPolicy` request (JSON) that tracks the
    /// weighted utilisation: each type's concurrency over its measured maximum, averaged.
    ScalingPolicy {
        /// Scenario JSON file (`-` for standard input).
        scenario: String,
        /// A pool type's measured maximum concurrency per instance, `TYPE=N`; one for every
        /// type of the endpoint's pools.
        #[arg(long = "max-concurrency", value_name = "TYPE=N", required = true)]
        max_concurrency: Vec<String>,
        /// Target utilisation, in (0, 1].
        #[arg(long, default_value_t = 0.7)]
        target: f64,
        /// CloudWatch namespace of the per-instance concurrency metric.
        #[arg(long, default_value = "fleetplan")]
        namespace: String,
        /// Name of the per-instance concurrency metric (dimensions EndpointName, VariantName,
        /// InstanceType).
        #[arg(long, default_value = "ConcurrentRequestsPerInstance")]
        metric_name: String,
    },
    /// Print the JSON Schema of a scenario, a plan as written, or a plan as `verify` reads it
    /// (also shipped in docs/schema/).
    Schema {
        /// Which document.
        #[arg(value_enum)]
        document: SchemaDocument,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchemaDocument {
    /// The scenario (input of every command).
    Scenario,
    /// The plan as fleetplan writes it (output of `plan --json`): every key it always writes.
    Plan,
    /// The plan as `verify` and `report --plan` read it: only `Actions` is required.
    PlanInput,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Solver {
    /// The greedy fast path.
    Greedy,
    /// The exact integer program (optimal or with a proven bound).
    Exact,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// microlp called directly: node limits and proven bounds after a time limit.
    Microlp,
    /// microlp through good_lp (no bound after a time limit).
    #[value(name = "good_lp-microlp")]
    GoodLpMicrolp,
    /// CBC through good_lp (needs the `cbc` feature and the system CBC library).
    #[cfg(feature = "cbc")]
    Cbc,
    /// microlp and CBC side by side on two threads, the better verified plan kept (needs the
    /// `cbc` feature).
    #[cfg(feature = "cbc")]
    Portfolio,
}

/// A failure that ends the run with exit code 2; the message goes to standard error.
struct BadInput(String);

fn main() -> ExitCode {
    // `--time-limit-ms` counts from here: it covers the whole command.
    let started = Instant::now();
    let cli = Cli::parse();
    let output = Output { quiet: cli.quiet };
    let options = if cli.strict { ReadOptions::strict() } else { ReadOptions::default() };
    match run(cli.command, output, &options, started) {
        Ok(code) => ExitCode::from(code),
        Err(BadInput(message)) => {
            eprint!("{message}");
            if !message.ends_with('\n') {
                eprintln!();
            }
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The exact planner's time limit when `--time-limit-ms` is not given (the library's default,
/// `fleetplan::ExactPlanner::DEFAULT_TIME_LIMIT`, counted from the start of the process).
const DEFAULT_EXACT_TIME_LIMIT_MS: u64 = 10_000;

/// The engine limits for `--time-limit-ms N`: an absolute deadline counted from `started` (the
/// start of the process, so reading and validating count too). Absent: the engine's default;
/// 0: no time limit at all (also none of the engine's default).
fn deadline_limits(started: Instant, time_limit_ms: Option<u64>) -> Limits {
    match time_limit_ms {
        None => Limits::new(),
        Some(0) => Limits::new().time_limit(Duration::MAX),
        Some(limit) => match started.checked_add(Duration::from_millis(limit)) {
            Some(at) => Limits::new().deadline(at),
            None => Limits::new().time_limit(Duration::MAX),
        },
    }
}

/// Where warnings go: standard error, unless `--quiet`.
#[derive(Clone, Copy)]
struct Output {
    quiet: bool,
}

impl Output {
    /// Prints already-formatted warning lines on standard error (nothing with `--quiet`).
    fn warn(self, lines: &str) {
        if !self.quiet && !lines.is_empty() {
            eprint!("{lines}");
            if !lines.ends_with('\n') {
                eprintln!();
            }
        }
    }
}

fn run(command: Command, output: Output, options: &ReadOptions, started: Instant) -> Result<u8, BadInput> {
    match command {
        Command::Plan { scenario, solver, time_limit_ms, backend, single_run, threads, json, stats } => {
            let problem = load_problem(&scenario, output, options)?;
            let out = PlanOutput { started, time_limit_ms, json, stats, output };
            run_plan(&problem, solver, (backend, single_run, threads), out)
        }
        Command::Consolidate { scenario, time_limit_ms, stats, json } => {
            let problem = load_problem(&scenario, output, options)?;
            let (plan, engine_stats) =
                Consolidator::new().limits(deadline_limits(started, time_limit_ms)).plan_with_stats(&problem);
            if stats {
                eprint!("{engine_stats}");
            }
            if json {
                emit(&to_json(&plan)?);
            } else {
                emit(&consolidation_table(&problem, &plan));
            }
            Ok(EXIT_OK)
        }
        Command::Rebalance { scenario, time_limit_ms, json } => {
            let problem = load_problem(&scenario, output, options)?;
            run_rebalance(&problem, started, time_limit_ms, json)
        }
        Command::Report { scenario, plan, json, svg } => run_report(&scenario, plan, json, svg, output, options),
        Command::Verify { scenario, plan, json } => {
            if scenario == "-" && plan == "-" {
                return Err(BadInput("SCENARIO and PLAN cannot both be read from standard input".to_string()));
            }
            let problem = load_problem(&scenario, output, options)?;
            let plan = load_plan(&plan)?;
            let violations = fleetplan::verify(&problem, &plan);
            if json {
                emit(&to_json(&violations)?);
            } else {
                emit(&violations_table(&violations));
            }
            Ok(if violations.is_empty() { EXIT_OK } else { EXIT_VIOLATIONS })
        }
        Command::Size { model, scenario, json } => {
            if model == "-" && scenario == "-" {
                return Err(BadInput("MODEL and SCENARIO cannot both be read from standard input".to_string()));
            }
            let text = read_input(&model)?;
            let description = fleetplan::sizing::ModelDescription::from_json(&text).map_err(|error| {
                BadInput(format!(
                    "{}: not a valid model description:\n{}",
                    escape_text(display_name(&model)),
                    validation_text(&error)
                ))
            })?;
            let problem = load_problem(&scenario, output, options)?;
            let sizing = fleetplan::sizing::size_pool(&description, &problem)
                .map_err(|error| BadInput(validation_text(&error)))?;
            emit(&if json { sizing.to_json() } else { sizing.to_table() });
            Ok(EXIT_OK)
        }
        Command::Simulate { script, time_limit_ms, json, svg } => {
            run_simulate(&script, deadline_limits(started, time_limit_ms), json, svg, output, options)
        }
        Command::ScalingPolicy { scenario, max_concurrency, target, namespace, metric_name } => {
            let problem = load_problem(&scenario, output, options)?;
            let metric = fleetplan::metrics::ConcurrencyMetric { namespace, metric_name, ..Default::default() };
            emit(&to_json(&scaling_policy_request(&problem, &max_concurrency, target, &metric)?)?);
            Ok(EXIT_OK)
        }
        Command::Schema { document } => {
            emit(&match document {
                SchemaDocument::Scenario => fleetplan::schema::scenario_schema(),
                SchemaDocument::Plan => fleetplan::schema::plan_schema(),
                SchemaDocument::PlanInput => fleetplan::schema::plan_input_schema(),
            });
            Ok(EXIT_OK)
        }
    }
}

/// How `plan` reports: the command's deadline and output switches.
fn scaling_policy_request(
    problem: &Problem,
    max_concurrency: &[String],
    target: f64,
    metric: &fleetplan::metrics::ConcurrencyMetric,
) -> Result<fleetplan::metrics::PutScalingPolicyRequest, BadInput> {
    let mut maxima = std::collections::BTreeMap::new();
    for entry in max_concurrency {
        let parsed = entry
            .split_once('=')
            .and_then(|(instance_type, value)| Some((instance_type.to_string(), value.trim().parse::<f64>().ok()?)));
        let Some((instance_type, value)) = parsed else {
            return Err(BadInput(format!(
                "--max-concurrency {}: expected TYPE=N, e.g. ml.g6.12xlarge=8",
                escape_text(entry)
            )));
        };
        if maxima.insert(instance_type, value).is_some() {
            return Err(BadInput(format!("--max-concurrency {}: the type is given twice", escape_text(entry))));
        }
    }
    let tracking =
        fleetplan::metrics::TargetTracking { target, ..fleetplan::metrics::TargetTracking::for_problem(problem) };
    fleetplan::metrics::scaling_policy(problem, &maxima, &tracking, metric)
        .map_err(|error| BadInput(escape_text(&error.to_string()).into_owned()))
}

struct PlanOutput {
    started: Instant,
    time_limit_ms: Option<u64>,
    json: bool,
    stats: bool,
    output: Output,
}

/// `fleetplan plan`: the chosen engine under the command's deadline, then the plan as JSON or a table.
fn run_plan(
    problem: &Problem,
    solver: Solver,
    (backend, single_run, threads): (Backend, bool, Option<u16>),
    out: PlanOutput,
) -> Result<u8, BadInput> {
    let (plan, engine_stats) = match solver {
        Solver::Greedy => {
            if backend != Backend::Microlp {
                out.output.warn("warning: --backend only applies to --solver exact; ignored");
            }
            if single_run {
                out.output.warn("warning: --single-run only applies to --solver exact; ignored");
            }
            if threads.is_some() {
                out.output.warn("warning: --threads only applies to --solver exact; ignored");
            }
            GreedyPlanner::new().limits(deadline_limits(out.started, out.time_limit_ms)).plan_with_stats(problem)
        }
        Solver::Exact => {
            // A command line should come back: without an explicit limit, 10 s.
            use fleetplan::backend::{good_lp, GoodLp};
            let mut planner = ExactPlanner::new().time_ladder(!single_run);
            if let Some(threads) = threads {
                planner = planner.threads(usize::from(threads));
            }
            match backend {
                Backend::Microlp => {}
                Backend::GoodLpMicrolp => planner = planner.backend(GoodLp::new(good_lp::microlp)),
                #[cfg(feature = "cbc")]
                Backend::Cbc => planner = planner.backend(GoodLp::new(fleetplan::backend::quiet_cbc)),
                #[cfg(feature = "cbc")]
                Backend::Portfolio => planner = planner.beside(GoodLp::new(fleetplan::backend::quiet_cbc)),
            }
            // Counted from the start of the process, like an explicit `--time-limit-ms`.
            let limit = out.time_limit_ms.unwrap_or(DEFAULT_EXACT_TIME_LIMIT_MS);
            planner.limits(deadline_limits(out.started, Some(limit))).plan_with_stats(problem)
        }
    };
    if out.stats {
        eprint!("{engine_stats}");
    }
    if out.json {
        emit(&to_json(&plan)?);
    } else {
        emit(&plan_table(problem, &plan));
    }
    Ok(EXIT_OK)
}

/// `fleetplan report`: the reliability report of the current fleet, or of the fleet after a plan.
fn run_report(
    scenario: &str,
    plan: Option<String>,
    json: bool,
    svg: Option<PathBuf>,
    output: Output,
    options: &ReadOptions,
) -> Result<u8, BadInput> {
    if scenario == "-" && plan.as_deref() == Some("-") {
        return Err(BadInput("SCENARIO and PLAN cannot both be read from standard input".to_string()));
    }
    let problem = load_problem(scenario, output, options)?;
    let (report, heading) = match plan {
        None => (ReliabilityReport::build(&problem), String::new()),
        Some(source) => {
            let plan = load_plan(&source)?;
            let (fleet, problems) = FinalFleet::apply(&problem, &plan.actions);
            if let Some(first) = problems.first() {
                output.warn(&escape_text(&format!(
                    "warning: {}: {} of the plan's actions do not apply to this fleet (first: {}); the report \
                     shows the fleet as far as they do; `fleetplan verify` lists them all",
                    display_name(&source),
                    problems.len(),
                    first.message
                )));
            }
            let heading = format!(
                "Fleet after the plan {} ({} actions)\n",
                escape_text(display_name(&source)),
                plan.actions.len()
            );
            (ReliabilityReport::for_fleet(&problem, &fleet), heading)
        }
    };
    if let Some(path) = svg {
        std::fs::write(&path, report.to_svg())
            .map_err(|error| BadInput(format!("{}: cannot write the SVG: {error}", path.display())))?;
    }
    if json {
        emit(&to_json(&report)?);
    } else {
        emit(&format!("{heading}{}", report.to_table()));
    }
    Ok(EXIT_OK)
}

/// The best-reachable comparison's time when `--time-limit-ms` is not given.
const DEFAULT_BOUND_TIME_LIMIT_MS: u64 = 2_000;

/// `fleetplan rebalance`: the plan, and (in the table) the distance to the exact planner's
/// optimum from an empty fleet. With `--time-limit-ms N` the planner gets half of what is left
/// after reading, the comparison a quarter, so the command returns within N ms plus printing.
fn run_rebalance(problem: &Problem, started: Instant, time_limit_ms: Option<u64>, json: bool) -> Result<u8, BadInput> {
    use fleetplan::{best_reachable, rebalance_table};
    let left = time_limit_ms.map(|limit| Duration::from_millis(limit).saturating_sub(started.elapsed()));
    let mut rebalancer = fleetplan::Rebalancer::new();
    if let Some(left) = left {
        // Half for the planner, the rest for the best-reachable comparison in the table.
        rebalancer = rebalancer.limits(Limits::new().time_limit(left / 2));
    }
    let plan = rebalancer.plan(problem);
    if json {
        emit(&to_json(&plan)?);
        return Ok(EXIT_OK);
    }
    let bound_time = match left {
        Some(left) => (left.saturating_sub(started.elapsed())) / 2,
        None => Duration::from_millis(DEFAULT_BOUND_TIME_LIMIT_MS),
    };
    let best = best_reachable(problem, bound_time);
    emit(&rebalance_table(problem, &plan, Some(&best)));
    Ok(EXIT_OK)
}

/// `fleetplan simulate`: the timeline table (or JSON), the SVG when asked; exit 1 when an
/// invariant broke.
fn run_simulate(
    source: &str,
    limits: Limits,
    json: bool,
    svg: Option<PathBuf>,
    output: Output,
    options: &ReadOptions,
) -> Result<u8, BadInput> {
    let text = read_input(source)?;
    let (script, problem) = fleetplan::simulate::Script::from_json_with(&text, options)
        .map_err(|error| BadInput(validation_text(&error)))?;
    output.warn(&warnings_summary(&problem, problem.warnings()));
    let simulation = fleetplan::simulate::Simulator::new()
        .limits(limits)
        .run(&script)
        .map_err(|error| BadInput(validation_text(&error)))?;
    if let Some(path) = svg {
        std::fs::write(&path, simulation.to_svg())
            .map_err(|error| BadInput(format!("{}: cannot write the SVG: {error}", path.display())))?;
    }
    if json {
        emit(&simulation.to_json());
    } else {
        emit(&simulation.to_table());
    }
    Ok(if simulation.failures.is_empty() { EXIT_OK } else { EXIT_VIOLATIONS })
}

/// How an input is named in messages.
fn display_name(source: &str) -> &str {
    if source == "-" {
        "<stdin>"
    } else {
        source
    }
}

/// Reads a file, or standard input for `-`.
fn read_input(source: &str) -> Result<String, BadInput> {
    let mut text = String::new();
    let result = if source == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(source).map(|contents| text = contents)
    };
    result.map_err(|error| BadInput(format!("{}: cannot read: {error}", display_name(source))))?;
    Ok(text)
}

/// Reads and validates a scenario. Validation messages become the exit-2 message (one per
/// line, `path: message`); warnings go to standard error, grouped by kind, and the run continues.
fn load_problem(source: &str, output: Output, options: &ReadOptions) -> Result<Problem, BadInput> {
    let text = read_input(source)?;
    let problem = Problem::from_json_with(&text, options).map_err(|error| BadInput(validation_text(&error)))?;
    output.warn(&warnings_summary(&problem, problem.warnings()));
    Ok(problem)
}

/// Reads a plan for `report --plan`.
fn load_plan(source: &str) -> Result<Plan, BadInput> {
    let text = read_input(source)?;
    Plan::from_json(&text).map_err(|error| {
        BadInput(format!("{}: not a valid plan:\n{}", escape_text(display_name(source)), validation_text(&error)))
    })
}

/// Pretty JSON with a trailing newline (deterministic: serde_json keeps field order).
fn to_json<T: serde::Serialize>(value: &T) -> Result<String, BadInput> {
    serde_json::to_string_pretty(value)
        .map(|mut text| {
            text.push('\n');
            text
        })
        .map_err(|error| BadInput(format!("cannot serialise the output: {error}")))
}

/// Writes to standard output; a closed pipe (`| head`) is not an error worth a panic.
fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}
