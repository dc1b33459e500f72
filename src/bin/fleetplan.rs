//! The `fleetplan` command line (spec §5).
//!
//! ```text
//! fleetplan plan SCENARIO [--solver greedy|exact] [--time-limit-ms N] [--backend B] [--json]
//! fleetplan consolidate SCENARIO [--json]
//! fleetplan report SCENARIO [--json] [--svg FILE]
//! fleetplan verify SCENARIO PLAN [--json]
//! fleetplan rebalance SCENARIO [--time-limit-ms N] [--json]
//! ```
//!
//! `SCENARIO` (or `PLAN`) may be `-` for standard input. Exit codes: 0 success (also for a
//! partial plan), 1 violations found by `verify`, 2 bad input (validation messages, one per
//! line, on standard error) or a file that cannot be read or written.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use fleetplan::{render, ExactPlanner, Plan, Problem, ReliabilityReport};

/// Exit code for success, including a partial plan.
const EXIT_OK: u8 = 0;
/// Exit code when `verify` finds violations.
const EXIT_VIOLATIONS: u8 = 1;
/// Exit code for bad input (invalid scenario or plan, unreadable file).
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser)]
#[command(name = "fleetplan", version, about = "Plan where ML model replicas run on SageMaker-style instance pools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Reconcile the fleet to the desired copy counts (spec §2).
    Plan {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Planning engine.
        #[arg(long, value_enum, default_value_t = Solver::Greedy)]
        solver: Solver,
        /// Wall-clock limit for the exact solver, in milliseconds (default 10000; 0 = no limit).
        /// A run that hits it says so (`Stop: time limit`) and returns its best proven plan.
        #[arg(long, value_name = "N")]
        time_limit_ms: Option<u64>,
        /// Integer-programming backend of the exact solver.
        #[arg(long, value_enum, default_value_t = Backend::Microlp)]
        backend: Backend,
        /// Print the plan as JSON (spec §4) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Move copies between existing instances so instances can be released (spec §3).
    Consolidate {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The reliability view: copies per AZ, blast radius, fleet composition.
    Report {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write an SVG heat map (components × AZs) to this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Return to preferred hardware and replace several instances by one, in make-before-break
    /// steps (spec §7).
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
    /// Check a plan from any source against the scenario; exit 1 if it breaks a rule.
    Verify {
        /// Scenario JSON file, or `-` for standard input.
        scenario: String,
        /// Plan JSON file (spec §4), or `-` for standard input.
        plan: String,
        /// Print the violations as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
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
}

/// A failure that ends the run with exit code 2; the message goes to standard error.
struct BadInput(String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
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

/// The exact planner's time limit when `--time-limit-ms` is not given.
const DEFAULT_EXACT_TIME_LIMIT_MS: u64 = 10_000;

fn run(command: Command) -> Result<u8, BadInput> {
    match command {
        Command::Plan { scenario, solver, time_limit_ms, backend, json } => {
            let problem = load_problem(&scenario)?;
            let plan = match solver {
                Solver::Greedy => {
                    if time_limit_ms.is_some() {
                        eprintln!("warning: --time-limit-ms only applies to --solver exact; ignored");
                    }
                    if backend != Backend::Microlp {
                        eprintln!("warning: --backend only applies to --solver exact; ignored");
                    }
                    fleetplan::plan_greedy(&problem)
                }
                Solver::Exact => {
                    // A command line should come back: without an explicit limit, 10 s.
                    use fleetplan::engines::exact::backend::{good_lp, GoodLp};
                    let mut planner = ExactPlanner::new();
                    match backend {
                        Backend::Microlp => {}
                        Backend::GoodLpMicrolp => planner = planner.backend(GoodLp::new(good_lp::microlp)),
                        #[cfg(feature = "cbc")]
                        Backend::Cbc => {
                            planner = planner.backend(GoodLp::new(fleetplan::engines::exact::backend::quiet_cbc))
                        }
                    }
                    match time_limit_ms.unwrap_or(DEFAULT_EXACT_TIME_LIMIT_MS) {
                        0 => {}
                        limit => planner = planner.time_limit(Duration::from_millis(limit)),
                    }
                    planner.plan(&problem)
                }
            };
            if json {
                emit(&to_json(&plan)?);
            } else {
                emit(&render::plan_table(&problem, &plan));
            }
            Ok(EXIT_OK)
        }
        Command::Consolidate { scenario, json } => {
            let problem = load_problem(&scenario)?;
            let plan = fleetplan::consolidate(&problem);
            if json {
                emit(&to_json(&plan)?);
            } else {
                emit(&render::consolidation_table(&problem, &plan));
            }
            Ok(EXIT_OK)
        }
        Command::Rebalance { scenario, time_limit_ms, json } => run_rebalance(&scenario, time_limit_ms, json),
        Command::Report { scenario, json, svg } => {
            let problem = load_problem(&scenario)?;
            let report = ReliabilityReport::build(&problem);
            if let Some(path) = svg {
                std::fs::write(&path, report.to_svg())
                    .map_err(|error| BadInput(format!("{}: cannot write the SVG: {error}", path.display())))?;
            }
            if json {
                emit(&to_json(&report)?);
            } else {
                emit(&report.to_table());
            }
            Ok(EXIT_OK)
        }
        Command::Verify { scenario, plan, json } => {
            if scenario == "-" && plan == "-" {
                return Err(BadInput("SCENARIO and PLAN cannot both be read from standard input".to_string()));
            }
            let problem = load_problem(&scenario)?;
            let plan_text = read_input(&plan)?;
            let plan: Plan = serde_json::from_str(&plan_text)
                .map_err(|error| BadInput(format!("{}: not a valid plan: {error}", display_name(&plan))))?;
            let violations = fleetplan::verify(&problem, &plan);
            if json {
                emit(&to_json(&violations)?);
            } else {
                emit(&render::violations_table(&violations));
            }
            Ok(if violations.is_empty() { EXIT_OK } else { EXIT_VIOLATIONS })
        }
    }
}

/// The best-reachable comparison's time when `--time-limit-ms` is not given.
const DEFAULT_BOUND_TIME_LIMIT_MS: u64 = 2_000;

/// `fleetplan rebalance`: the plan, and (in the table) the distance to the exact planner's
/// optimum from an empty fleet. With `--time-limit-ms N` the planner gets half of what is left
/// after reading, the comparison a quarter, so the command returns within N ms plus printing.
fn run_rebalance(scenario: &str, time_limit_ms: Option<u64>, json: bool) -> Result<u8, BadInput> {
    use fleetplan::engines::rebalance::{best_reachable, rebalance_table};
    let started = std::time::Instant::now();
    let problem = load_problem(scenario)?;
    let left = time_limit_ms.map(|limit| Duration::from_millis(limit).saturating_sub(started.elapsed()));
    let mut rebalancer = fleetplan::Rebalancer::new();
    if let Some(left) = left {
        rebalancer = rebalancer.time_limit(left / 2);
    }
    let plan = rebalancer.plan(&problem);
    if json {
        emit(&to_json(&plan)?);
        return Ok(EXIT_OK);
    }
    let bound_time = match left {
        Some(left) => (left.saturating_sub(started.elapsed())) / 2,
        None => Duration::from_millis(DEFAULT_BOUND_TIME_LIMIT_MS),
    };
    let best = best_reachable(&problem, bound_time);
    emit(&rebalance_table(&problem, &plan, Some(&best)));
    Ok(EXIT_OK)
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
/// line, `path: message`); warnings go to standard error and the run continues.
fn load_problem(source: &str) -> Result<Problem, BadInput> {
    let text = read_input(source)?;
    let problem = Problem::from_json(&text).map_err(|error| BadInput(render::validation_text(&error)))?;
    eprint!("{}", render::warnings_text(problem.warnings()));
    Ok(problem)
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
