//! Readable plain-text tables for plans, violations, validation errors and consolidation plans.
//!
//! The output is meant for a terminal or a log: aligned columns, no colour, no trailing spaces,
//! and deterministic (the same input renders to the same bytes). Machine consumers should use
//! the JSON forms instead; these tables may gain columns.
//!
//! Names come from the input and may hold anything, so every name and message goes through one
//! escaping helper per medium before it is printed: [`escape_text`] for terminal text (tables,
//! messages, warnings) and [`escape_xml`] for the SVG heat map. A name with a newline, a tab or
//! a terminal escape sequence can therefore neither break a table nor recolour a terminal.
//!
//! ```
//! use fleetplan::{plan_greedy, render, Problem};
//!
//! let problem = Problem::from_json(r#"{
//!   "AvailabilityZones": ["us-east-1a", "us-east-1b"],
//!   "Endpoint": {"InstanceType": "ml.g6.12xlarge"},
//!   "InferenceComponents": [{"InferenceComponentName": "chat",
//!     "Specification": {"ComputeResourceRequirements": {"MinMemoryRequiredInMb": 4096}},
//!     "RuntimeConfig": {"CopyCount": 2}}]
//! }"#).unwrap();
//! let table = render::plan_table(&problem, &plan_greedy(&problem));
//! assert!(table.starts_with("Plan for endpoint"));
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::engines::consolidate::ConsolidationPlan;
use crate::engines::steps::{write_step, Places};
use crate::error::{ValidationError, Warning, WarningKind};
use crate::fleet::{imbalance, objective, FinalFleet};
use crate::plan::{Action, Objective, Plan, SolverKind, Status, StopReason};
use crate::problem::Problem;
pub use crate::text::escape_text;
use crate::text::{counted, shorten, Align, Table};
use crate::violation::Violation;

/// Escapes a name or message for XML text and attribute values (the SVG): first as for the
/// terminal ([`escape_text`], so the SVG shows the same characters as the tables and holds no
/// character that XML 1.0 forbids), then `&`, `<`, `>`, `"` and `'` as entities.
///
/// ```
/// use fleetplan::render::escape_xml;
/// assert_eq!(escape_xml("a<b & \"c\" 'd'\u{1}"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\\u{1}");
/// ```
pub fn escape_xml(text: &str) -> String {
    let visible = escape_text(text);
    let mut out = String::with_capacity(visible.len());
    for ch in visible.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            other => out.push(other),
        }
    }
    out
}

/// `yes` / `no`.
fn yes_no(flag: bool) -> String {
    if flag { "yes" } else { "no" }.to_string()
}

/// One-line summary of an objective, e.g.
/// `placed 6 copies, balance excess 0, instances p1=2 p2=1 (3 total), cost 20.98 per hour`.
pub fn objective_line(objective: &Objective) -> String {
    objective.to_string()
}

/// Why an engine stopped, in words.
pub fn stop_reason_text(reason: &StopReason) -> String {
    reason.to_string()
}

/// Warnings, one per line (`warning: path: message`), escaped. See [`warnings_summary`] for the
/// grouped form the command line prints.
pub fn warnings_text(warnings: &[Warning]) -> String {
    warnings.iter().map(|warning| format!("{}\n", escape_text(&warning.to_string()))).collect()
}

/// How many names a grouped warning line shows before `and N more`.
const WARNING_NAMES_SHOWN: usize = 5;

/// Names in a grouped warning line are cut to this many characters.
const WARNING_NAME_CHARS: usize = 40;

/// What a group of warnings of one kind is about, as a plural noun phrase.
fn warning_kind_title(kind: WarningKind) -> &'static str {
    match kind {
        WarningKind::SingleCopy => "components with a single copy (one AZ outage takes each down)",
        WarningKind::ImbalanceUnreachable => "components whose copy count can never meet MaxImbalance 0",
        WarningKind::NoCapacityInAz => "AZs where no pool instance type can launch",
        WarningKind::Ignored => "fields given without effect",
        WarningKind::UnknownKeys => "lists of keys fleetplan does not read",
        WarningKind::PartialPrices => "notes on instance types without an HourlyPrice",
    }
}

/// The index in `path` right after `prefix` (`InferenceComponents[12].X` → 12).
fn indexed(path: &str, prefix: &str) -> Option<usize> {
    let rest = path.strip_prefix(prefix)?.strip_prefix('[')?;
    rest.split(']').next()?.parse().ok()
}

/// What a warning is about, by name: the component, AZ or fleet instance its path points into,
/// otherwise the path itself.
fn warning_subject(problem: &Problem, warning: &Warning) -> String {
    let path = warning.path.as_str();
    let named = indexed(path, "InferenceComponents")
        .and_then(|index| problem.components().get(index))
        .map(|component| component.name.clone())
        .or_else(|| indexed(path, "AvailabilityZones").and_then(|index| problem.azs().get(index).cloned()))
        .or_else(|| {
            indexed(path, "Fleet.Instances").and_then(|index| problem.fleet().get(index)).map(|i| i.id.clone())
        });
    named.unwrap_or_else(|| path.to_string())
}

/// Warnings grouped by kind, one line per kind, escaped, in [`WarningKind`] order.
///
/// A kind with one warning prints it whole (`warning: path: message`, with the name of what the
/// path points into after the path when the message does not say it); a kind with several
/// prints a count, what they are about and the first few names, e.g.
/// `warning: 131 components with a single copy (one AZ outage takes each down): a, b, c, d, e and
/// 126 more`. Names are those of the component, AZ or fleet instance the warning's path points
/// into (not `InferenceComponents[3071]`). The complete list stays available in the plan JSON
/// (`Warnings`) and [`Problem::warnings`].
pub fn warnings_summary(problem: &Problem, warnings: &[Warning]) -> String {
    let mut groups: BTreeMap<WarningKind, Vec<&Warning>> = BTreeMap::new();
    for warning in warnings {
        groups.entry(warning.kind).or_default().push(warning);
    }
    let mut out = String::new();
    for (kind, group) in groups {
        if let [only] = group.as_slice() {
            // Name what the path points into unless the message already does.
            let subject = warning_subject(problem, only);
            let line = if subject == only.path || only.message.contains(subject.as_str()) {
                only.to_string()
            } else {
                format!("warning: {} ({}): {}", only.path, shorten(&subject, WARNING_NAME_CHARS), only.message)
            };
            let _ = writeln!(out, "{}", escape_text(&line));
            continue;
        }
        let names: Vec<String> = group
            .iter()
            .take(WARNING_NAMES_SHOWN)
            .map(|warning| shorten(&warning_subject(problem, warning), WARNING_NAME_CHARS).into_owned())
            .collect();
        let more = group.len().saturating_sub(WARNING_NAMES_SHOWN);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        let line = format!("warning: {} {}: {}{tail}", group.len(), warning_kind_title(kind), names.join(", "));
        let _ = writeln!(out, "{}", escape_text(&line));
    }
    out
}

/// Validation messages, one per line (`path: message`), escaped, in the order they were found.
pub fn validation_text(error: &ValidationError) -> String {
    error.issues().iter().map(|issue| format!("{}\n", escape_text(&issue.to_string()))).collect()
}

/// Every violation as a table (kind, message), headed by the count; `plan is valid` when empty.
pub fn violations_table(violations: &[Violation]) -> String {
    if violations.is_empty() {
        return "plan is valid: no violations\n".to_string();
    }
    let mut out = format!("{}\n", counted(violations.len() as u64, "violation", "violations"));
    let mut table = Table::new(&[("KIND", Align::Left), ("MESSAGE", Align::Left)]);
    for violation in violations {
        table.row(vec![format!("{:?}", violation.kind), violation.message.clone()]);
    }
    out.push_str(&table.render("  "));
    out
}

/// Name of the instance type at `type_index`, or `?` (only for inconsistent input).
fn type_name(problem: &Problem, type_index: usize) -> String {
    problem.instance_types().get(type_index).map_or_else(|| "?".to_string(), |info| info.name.clone())
}

/// The endpoint's name, or `(unnamed)`.
fn endpoint_text(problem: &Problem) -> &str {
    if problem.endpoint_name().is_empty() {
        "(unnamed)"
    } else {
        problem.endpoint_name()
    }
}

fn az_name(problem: &Problem, az_index: usize) -> String {
    problem.azs().get(az_index).cloned().unwrap_or_else(|| "?".to_string())
}

fn component_name(problem: &Problem, component_index: usize) -> String {
    problem.components().get(component_index).map_or_else(|| "?".to_string(), |component| component.name.clone())
}

/// A readable plan: header (solver, status, stop reason), objective and bound, launches, a
/// per-component AZ summary, copies per instance of the final fleet, removals and
/// terminations, and unplaced copies with their reasons (`2 copies of chat cannot be placed` when the plan is
/// `Optimal`, otherwise `… not placed by this planner`). Validation warnings are not repeated
/// here ([`warnings_summary`] renders them; the command line prints them once, on standard
/// error).
///
/// Sections without content are left out, except the launches and copies tables, which say
/// `none`.
pub fn plan_table(problem: &Problem, plan: &Plan) -> String {
    let mut out = String::new();
    let solver = match plan.solver {
        SolverKind::Greedy => "greedy",
        SolverKind::Exact => "exact",
        SolverKind::Other => plan.omitted.solver_name.as_deref().unwrap_or("other"),
    };
    let _ = writeln!(
        out,
        "Plan for endpoint {} (variant {})",
        escape_text(endpoint_text(problem)),
        escape_text(problem.variant_name())
    );
    let _ =
        writeln!(out, "Solver: {}   Status: {:?}   Stop: {}", solver, plan.status, stop_reason_text(&plan.stop_reason));
    let _ = writeln!(out, "Objective: {}", objective_line(&plan.objective));
    if let Some(bound) = &plan.bound {
        let _ = writeln!(out, "Bound: {}", objective_line(bound));
    }
    if plan.status == Status::Infeasible {
        if let Some(why) = crate::explain::infeasibility(problem) {
            let _ = writeln!(out, "Infeasible: {}", escape_text(&why.to_string()));
        }
    }

    let (fleet, _) = FinalFleet::apply(problem, &plan.actions);

    write_launches(&mut out, problem, plan);
    write_components(&mut out, problem, &fleet);
    write_final_fleet(&mut out, problem, &fleet);
    write_removals(&mut out, problem, plan);
    write_unplaced(&mut out, plan);
    out
}

/// Launches, or `none`.
fn write_launches(out: &mut String, problem: &Problem, plan: &Plan) {
    let launches: Vec<(&String, &String, &String, bool)> = plan
        .actions
        .iter()
        .filter_map(|action| match action {
            Action::LaunchInstance { instance_id, instance_type, availability_zone, reserved } => {
                Some((instance_id, instance_type, availability_zone, *reserved))
            }
            _ => None,
        })
        .collect();
    let _ = writeln!(out, "\nLaunches ({})", launches.len());
    if launches.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut table = Table::new(&[
            ("ID", Align::Left),
            ("TYPE", Align::Left),
            ("AZ", Align::Left),
            ("PRIORITY", Align::Right),
            ("RESERVED", Align::Left),
        ]);
        for (id, instance_type, az, reserved) in launches {
            let priority = problem
                .type_index(instance_type)
                .and_then(|index| problem.instance_types().get(index))
                .map_or_else(|| "?".to_string(), |info| info.priority.to_string());
            table.row(vec![id.clone(), instance_type.clone(), az.clone(), priority, yes_no(reserved)]);
        }
        out.push_str(&table.render("  "));
    }
}

/// Components: copies per AZ (one column per AZ), imbalance against MaxImbalance.
fn write_components(out: &mut String, problem: &Problem, fleet: &FinalFleet) {
    if !problem.components().is_empty() {
        let per_az = fleet.copies_per_az(problem);
        let _ = writeln!(out, "\nComponents ({}), copies per AZ", problem.components().len());
        let mut columns = vec![("COMPONENT", Align::Left), ("WANTED", Align::Right), ("PLACED", Align::Right)];
        columns.extend(problem.azs().iter().map(|az| (az.as_str(), Align::Right)));
        columns.extend([("IMBALANCE", Align::Right), ("MAX", Align::Right)]);
        let mut table = Table::new(&columns);
        for (component, counts) in problem.components().iter().zip(&per_az) {
            let placed: u64 = counts.iter().sum();
            let mut row = vec![component.name.clone(), component.copy_count.to_string(), placed.to_string()];
            row.extend(counts.iter().map(u64::to_string));
            row.push(imbalance(counts).to_string());
            row.push(component.max_imbalance.map_or_else(|| "-".to_string(), |limit| limit.to_string()));
            table.row(row);
        }
        out.push_str(&table.render("  "));
    }
}

/// Copies per instance of the final fleet, or `none`.
fn write_final_fleet(out: &mut String, problem: &Problem, fleet: &FinalFleet) {
    let _ = writeln!(out, "\nFinal fleet ({})", counted(fleet.instances.len() as u64, "instance", "instances"));
    if fleet.instances.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut table = Table::new(&[
            ("INSTANCE", Align::Left),
            ("TYPE", Align::Left),
            ("AZ", Align::Left),
            ("PRIORITY", Align::Right),
            ("ACCEL USED", Align::Right),
            ("COMPONENT", Align::Left),
            ("COPIES", Align::Right),
            ("NEW", Align::Right),
        ]);
        for instance in &fleet.instances {
            let info = problem.instance_types().get(instance.type_index);
            let used = instance.used(problem);
            let accelerators = info.map_or(0, |info| info.capacity.accelerators);
            let mut head = vec![
                instance.id.clone(),
                type_name(problem, instance.type_index),
                az_name(problem, instance.az_index),
                info.map_or_else(|| "?".to_string(), |info| info.priority.to_string()),
                format!("{}/{}", used.accelerators, accelerators),
            ];
            if instance.copies.is_empty() {
                head.extend(["(empty)".to_string(), "0".to_string(), "0".to_string()]);
                table.row(head);
                continue;
            }
            for (position, (&component, &count)) in instance.copies.iter().enumerate() {
                let new = instance.new_copies.get(&component).copied().unwrap_or(0);
                let mut row = if position == 0 { std::mem::take(&mut head) } else { vec![String::new(); 5] };
                row.extend([component_name(problem, component), count.to_string(), new.to_string()]);
                table.row(row);
            }
        }
        out.push_str(&table.render("  "));
    }
}

/// Removals (aggregated per component and instance) and terminations.
fn write_removals(out: &mut String, problem: &Problem, plan: &Plan) {
    let mut removals: BTreeMap<(&String, &String), u32> = BTreeMap::new();
    let mut terminations: Vec<&String> = Vec::new();
    for action in &plan.actions {
        match action {
            Action::RemoveCopy { component, instance_id } => {
                *removals.entry((component, instance_id)).or_insert(0) += 1;
            }
            Action::TerminateInstance { instance_id } => terminations.push(instance_id),
            _ => {}
        }
    }
    if !removals.is_empty() {
        let total: u32 = removals.values().sum();
        let _ = writeln!(out, "\nRemoved copies ({total})");
        let mut table = Table::new(&[("COMPONENT", Align::Left), ("INSTANCE", Align::Left), ("COPIES", Align::Right)]);
        for ((component, instance), count) in &removals {
            table.row(vec![component.to_string(), instance.to_string(), count.to_string()]);
        }
        out.push_str(&table.render("  "));
    }
    if !terminations.is_empty() {
        let _ = writeln!(out, "\nTerminated instances ({})", terminations.len());
        let mut table = Table::new(&[("INSTANCE", Align::Left), ("TYPE", Align::Left), ("AZ", Align::Left)]);
        for id in terminations {
            let existing = problem.existing_index(id).and_then(|index| problem.fleet().get(index));
            table.row(vec![
                id.clone(),
                existing.map_or_else(|| "?".to_string(), |instance| type_name(problem, instance.type_index)),
                existing.map_or_else(|| "?".to_string(), |instance| az_name(problem, instance.az_index)),
            ]);
        }
        out.push_str(&table.render("  "));
    }
}

/// Unplaced copies with reasons; "cannot be placed" only when the plan proves it (Optimal).
fn write_unplaced(out: &mut String, plan: &Plan) {
    if !plan.unplaced.is_empty() {
        let total: u64 = plan.unplaced.iter().map(|entry| entry.copy_count).sum();
        let _ = writeln!(out, "\nUnplaced ({})", counted(total, "copy", "copies"));
        let proven = plan.unplaced_is_proven();
        for entry in &plan.unplaced {
            let _ = writeln!(out, "  {}", escape_text(&entry.summary(proven)));
            for reason in &entry.reasons {
                let _ = writeln!(out, "    - {}", escape_text(reason));
            }
        }
    }
}

/// A readable consolidation plan: a summary line, the objective of the current fleet and of the
/// final fleet, then each step's moves and releases.
pub fn consolidation_table(problem: &Problem, plan: &ConsolidationPlan) -> String {
    let mut out = String::new();
    let moves = plan.move_count();
    let released = plan.released().count();
    let _ = writeln!(
        out,
        "Consolidation for endpoint {}: {}, {}, {} released",
        escape_text(endpoint_text(problem)),
        counted(plan.steps.len() as u64, "step", "steps"),
        counted(moves as u64, "move", "moves"),
        counted(released as u64, "instance", "instances"),
    );
    let places = Places::new(problem, []);
    let (current, _) = FinalFleet::apply(problem, &[]);
    let _ = writeln!(out, "Objective before: {}", objective_line(&objective(problem, &current)));
    let _ = writeln!(out, "Objective after:  {}", objective_line(&plan.objective));
    if plan.steps.is_empty() {
        out.push_str("\nNothing to consolidate.\n");
    }
    for (number, step) in plan.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nStep {} ({}, {} released)",
            number + 1,
            counted(step.moves.len() as u64, "move", "moves"),
            step.release.len()
        );
        write_step(&mut out, &places, step);
    }
    out
}
