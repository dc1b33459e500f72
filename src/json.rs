//! Reading a scenario from JSON with path-aware, complete type errors.
//!
//! serde's derive stops at the first type error and reports a line/column; users of a
//! SageMaker-shaped payload want every wrong field at once, named by its JSON path. So the
//! document is parsed into a [`serde_json::Value`] (by our own seed, which catches keys given
//! twice and numbers out of range with their path) and walked by hand.
//!
//! Unknown keys (contract §1): the known keys of an object are exactly the keys the reader
//! looks up in it, recorded as it reads — one place, so a field added to the reader is known
//! at once, and a key can never be "known" yet silently dropped. Every other key is unknown:
//! a warning listing every such path, an error naming the known key when it looks like a
//! misspelling (same letters in another case, or at most two edits away, by `strsim`), and an
//! error in strict mode.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{Issue, IssueKind, ValidationError, Warning, WarningKind};
use crate::model;
use crate::raw::*;
use crate::text::{counted, shorten};

mod model_file;
mod sizing_output;

/// How a scenario is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Every unknown key is an error (not only the ones that look like a misspelt known key).
    pub strict: bool,
}

impl ReadOptions {
    /// Strict reading: every unknown key is an error.
    pub fn strict() -> Self {
        ReadOptions { strict: true }
    }
}

/// Parses a scenario from JSON text. Type errors name their JSON path; all are reported.
/// Without type errors the scenario is also validated (as by [`crate::Problem::new`]): a typed
/// [`model::Scenario`] holds only values its types can represent, and validation is what
/// guarantees that. Unknown keys follow the default (non-strict) rules; their warning is dropped
/// here because a [`model::Scenario`] carries no warnings (use [`crate::Problem::from_json`]).
pub fn scenario_from_json(text: &str) -> Result<model::Scenario, ValidationError> {
    let read = read_scenario(text, &ReadOptions::default())?;
    if read.issues.is_empty() {
        validate_read(read).map(|(scenario, _)| scenario)
    } else {
        Err(ValidationError::new(read.issues))
    }
}

impl crate::Problem {
    /// Parses and validates scenario JSON (type and semantic problems reported together).
    /// Unknown keys follow the default rules of [`crate::json::ReadOptions`].
    pub fn from_json(text: &str) -> Result<crate::Problem, ValidationError> {
        problem_from_json(text)
    }

    /// [`Problem::from_json`](crate::Problem::from_json) with reading options, e.g. `&ReadOptions::strict()` to make every
    /// unknown key an error.
    pub fn from_json_with(text: &str, options: &ReadOptions) -> Result<crate::Problem, ValidationError> {
        problem_from_json_with(text, options)
    }
}

/// Reads a scenario and validates it into a [`crate::Problem`], reporting type and semantic
/// problems together.
pub fn problem_from_json(text: &str) -> Result<crate::Problem, ValidationError> {
    problem_from_json_with(text, &ReadOptions::default())
}

/// [`problem_from_json`] with options (e.g. strict unknown-key checking).
pub fn problem_from_json_with(text: &str, options: &ReadOptions) -> Result<crate::Problem, ValidationError> {
    scenario_and_problem_from_json(text, options).map(|(_, problem)| problem)
}

/// Reads a scenario and validates it, keeping both: the simulator re-plans the scenario with a
/// changing fleet and needs the plain data as well as the validated problem.
pub(crate) fn scenario_and_problem_from_json(
    text: &str,
    options: &ReadOptions,
) -> Result<(model::Scenario, crate::Problem), ValidationError> {
    validate_read(read_scenario(text, options)?)
}

/// Reads and validates a scenario document that is already a [`Value`] (built in code, e.g. by
/// [`crate::sagemaker`] from SDK values): the same reader and validator as JSON text, so the
/// same input gives the same messages. `complete` fills in parts of the scenario that were
/// given as typed data rather than in the document, before validation.
#[cfg(feature = "sagemaker")]
pub(crate) fn scenario_and_problem_from_value(
    value: &Value,
    options: &ReadOptions,
    complete: impl FnOnce(&mut Scenario),
) -> Result<(model::Scenario, crate::Problem), ValidationError> {
    let parsed =
        Parsed { value: value.clone(), duplicates: Vec::new(), raw_numbers: BTreeMap::new(), oversized: Vec::new() };
    let mut read = read_parsed(parsed, options);
    complete(&mut read.scenario);
    validate_read(read)
}

/// Validates what the reader produced, reporting type and semantic problems together.
fn validate_read(read: Read) -> Result<(model::Scenario, crate::Problem), ValidationError> {
    let validator = || crate::problem::Validator::with_raw_numbers(read.raw_numbers.clone());
    if read.oversized {
        return Err(ValidationError::new(read.issues));
    }
    if read.issues.is_empty() {
        let mut problem = validator().run(&read.scenario)?;
        if let Some(warning) = read.warning {
            problem.warnings.insert(0, warning);
        }
        return Ok((read.scenario.to_typed(), problem));
    }
    // Validate what could be read, but drop issues about fields that already have a type error:
    // their defaulted values would only produce follow-on noise.
    let typed_count = read.issues.len();
    let mut issues = read.issues;
    if let Err(semantic) = validator().run(&read.scenario) {
        for issue in semantic.issues() {
            // Compare with the type errors only, never with semantic issues kept before.
            let shadowed = issues[..typed_count].iter().any(|typed| shadows(&typed.path, &issue.path));
            if !shadowed {
                issues.push(issue.clone());
            }
        }
    }
    Err(ValidationError::new(issues))
}

impl crate::Plan {
    /// Reads a plan from any source (contract §5): only `Actions` is required. `Solver` may be
    /// any string; `Status`, `StopReason`, `Objective` (with or without `CostUnit`), `Unplaced`
    /// (with or without `Reasons`) and `Bound` are optional — [`crate::verify()`] checks them when
    /// present and derives them when absent ([`Plan::omitted`](crate::Plan::omitted) says which). Other keys, such as
    /// `Warnings`, are not read. Every problem is reported with its JSON path.
    pub fn from_json(text: &str) -> Result<crate::Plan, ValidationError> {
        plan_from_json(text)
    }

    /// The plan as pretty JSON (deterministic).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Reads a plan from any source (see [`crate::Plan::from_json`]).
pub fn plan_from_json(text: &str) -> Result<crate::Plan, ValidationError> {
    use crate::plan::{Objective, Omitted, Plan, SolverKind, Status, StopReason};
    let parsed = parse(text)?;
    let mut issues: Vec<Issue> = parsed
        .duplicates
        .into_iter()
        .map(|path| Issue::new(IssueKind::DuplicateKey, path, "key given twice"))
        .collect();
    let Value::Object(map) = &parsed.value else {
        issues.push(Issue::new(
            IssueKind::Malformed,
            "",
            format!("expected a plan object, found {}", describe(&parsed.value)),
        ));
        return Err(ValidationError::new(issues));
    };
    let present = |key: &str| map.get(key).filter(|value| !value.is_null());
    let mut actions = Vec::new();
    match present("Actions") {
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                if let Some(action) = plan_action(item, &format!("Actions[{index}]"), &mut issues) {
                    actions.push(action);
                }
            }
        }
        Some(other) => issues.push(Issue::new(
            IssueKind::TypeMismatch,
            "Actions",
            format!("expected an array, found {}", describe(other)),
        )),
        None => issues.push(Issue::new(IssueKind::MissingField, "Actions", "is required")),
    }
    let mut omitted = Omitted::default();
    let solver = match present("Solver") {
        Some(Value::String(name)) if name == "greedy" => SolverKind::Greedy,
        Some(Value::String(name)) if name == "exact" => SolverKind::Exact,
        Some(Value::String(name)) => {
            omitted.solver_name = Some(name.clone());
            SolverKind::Other
        }
        Some(other) => {
            issues.push(Issue::new(
                IssueKind::TypeMismatch,
                "Solver",
                format!("expected a string, found {}", describe(other)),
            ));
            SolverKind::Other
        }
        None => SolverKind::Other,
    };
    let status = match present("Status") {
        Some(value) => typed::<Status>(value, "Status", &mut issues).unwrap_or(Status::Feasible),
        None => {
            omitted.status = true;
            Status::Feasible
        }
    };
    let stop_reason = present("StopReason")
        .and_then(|value| typed::<StopReason>(value, "StopReason", &mut issues))
        .unwrap_or(StopReason::Completed);
    let unplaced = match present("Unplaced") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| plan_unplaced(item, &format!("Unplaced[{index}]"), &mut issues))
            .collect(),
        Some(other) => {
            issues.push(Issue::new(
                IssueKind::TypeMismatch,
                "Unplaced",
                format!("expected an array, found {}", describe(other)),
            ));
            Vec::new()
        }
        None => {
            omitted.unplaced = true;
            Vec::new()
        }
    };
    let objective = match present("Objective") {
        Some(value) => {
            omitted.cost_unit = value.get("CostUnit").is_none_or(Value::is_null);
            plan_objective(value, "Objective", &mut issues).unwrap_or_default()
        }
        None => {
            omitted.objective = true;
            Objective::default()
        }
    };
    let bound = present("Bound").and_then(|value| plan_objective(value, "Bound", &mut issues));
    if !issues.is_empty() {
        return Err(ValidationError::new(issues));
    }
    Ok(Plan { solver, status, stop_reason, actions, unplaced, objective, bound, warnings: Vec::new(), omitted })
}

/// One typed part of a plan, with serde's own message under its path.
fn typed<T: serde::de::DeserializeOwned>(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<T> {
    match T::deserialize(value) {
        Ok(typed) => Some(typed),
        Err(error) => {
            issues.push(Issue::new(IssueKind::TypeMismatch, path.to_string(), shorten(&error.to_string(), 200)));
            None
        }
    }
}

/// A plan object's field, read on its own so that a type error names the field's path
/// (`Actions[0].InstanceId`), not the object's. `null` counts as absent; an absent required
/// field is an issue.
fn plan_field<T: serde::de::DeserializeOwned>(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
    required: bool,
    issues: &mut Vec<Issue>,
) -> Option<T> {
    let path = join(path, key);
    match map.get(key).filter(|value| !value.is_null()) {
        Some(value) => typed(value, &path, issues),
        None => {
            if required {
                issues.push(Issue::new(IssueKind::MissingField, path, "is required"));
            }
            None
        }
    }
}

/// A required string field of a plan object (`expected a string, found 5` under its path).
fn plan_text(map: &Map<String, Value>, key: &str, path: &str, issues: &mut Vec<Issue>) -> Option<String> {
    match map.get(key).filter(|value| !value.is_null()) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => {
            issues.push(Issue::new(
                IssueKind::TypeMismatch,
                join(path, key),
                format!("expected a string, found {}", describe(other)),
            ));
            None
        }
        None => {
            issues.push(Issue::new(IssueKind::MissingField, join(path, key), "is required"));
            None
        }
    }
}

/// The object at `path`, or an issue naming what was found instead.
fn plan_object<'v>(
    value: &'v Value,
    path: &str,
    what: &str,
    issues: &mut Vec<Issue>,
) -> Option<&'v Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        other => {
            issues.push(Issue::new(
                IssueKind::TypeMismatch,
                path.to_string(),
                format!("expected {what}, found {}", describe(other)),
            ));
            None
        }
    }
}

/// One entry of a plan's `Actions`, every problem under the path of the field it concerns.
fn plan_action(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<crate::plan::Action> {
    use crate::plan::Action;
    let map = plan_object(value, path, "an action object", issues)?;
    let kind = plan_text(map, "Type", path, issues)?;
    let before = issues.len();
    let action = match kind.as_str() {
        "LaunchInstance" => {
            let instance_id = plan_text(map, "InstanceId", path, issues);
            let instance_type = plan_text(map, "InstanceType", path, issues);
            let availability_zone = plan_text(map, "AvailabilityZone", path, issues);
            let reserved = plan_field::<bool>(map, "Reserved", path, false, issues).unwrap_or(false);
            Action::LaunchInstance {
                instance_id: instance_id.unwrap_or_default(),
                instance_type: instance_type.unwrap_or_default(),
                availability_zone: availability_zone.unwrap_or_default(),
                reserved,
            }
        }
        "PlaceCopy" => {
            let component = plan_text(map, "InferenceComponentName", path, issues);
            let instance_id = plan_text(map, "InstanceId", path, issues);
            let model_name = plan_field::<String>(map, "ModelName", path, false, issues);
            Action::PlaceCopy {
                component: component.unwrap_or_default(),
                instance_id: instance_id.unwrap_or_default(),
                model_name,
            }
        }
        "RemoveCopy" => {
            let component = plan_text(map, "InferenceComponentName", path, issues);
            let instance_id = plan_text(map, "InstanceId", path, issues);
            Action::RemoveCopy {
                component: component.unwrap_or_default(),
                instance_id: instance_id.unwrap_or_default(),
            }
        }
        "TerminateInstance" => {
            Action::TerminateInstance { instance_id: plan_text(map, "InstanceId", path, issues).unwrap_or_default() }
        }
        other => {
            issues.push(Issue::new(
                IssueKind::InvalidValue,
                join(path, "Type"),
                format!(
                    "unknown action type {} (expected LaunchInstance, PlaceCopy, RemoveCopy or TerminateInstance)",
                    describe(&Value::String(other.to_string()))
                ),
            ));
            return None;
        }
    };
    (issues.len() == before).then_some(action)
}

/// One entry of a plan's `Unplaced`, every problem under the path of its field.
fn plan_unplaced(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<crate::plan::Unplaced> {
    let map = plan_object(value, path, "an object", issues)?;
    let before = issues.len();
    let name = plan_text(map, "InferenceComponentName", path, issues);
    let copy_count = plan_field::<u64>(map, "CopyCount", path, true, issues);
    let reasons = plan_field::<Vec<String>>(map, "Reasons", path, false, issues).unwrap_or_default();
    let (Some(inference_component_name), Some(copy_count)) = (name, copy_count) else { return None };
    (issues.len() == before).then(|| crate::plan::Unplaced {
        inference_component_name,
        copy_count,
        reasons,
        causes: Vec::new(),
    })
}

/// A plan's `Objective` or `Bound`, every problem under the path of its field.
fn plan_objective(value: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<crate::plan::Objective> {
    let map = plan_object(value, path, "an objective object", issues)?;
    let before = issues.len();
    let placed_copies = plan_field::<u64>(map, "PlacedCopies", path, true, issues);
    let balance_excess = plan_field::<u64>(map, "BalanceExcess", path, true, issues);
    let instances_by_priority = plan_field::<BTreeMap<u8, u32>>(map, "InstancesByPriority", path, true, issues);
    let cost = plan_field::<f64>(map, "Cost", path, true, issues);
    let cost_unit = plan_field::<crate::plan::CostUnit>(map, "CostUnit", path, false, issues).unwrap_or_default();
    let (Some(placed_copies), Some(balance_excess), Some(instances_by_priority), Some(cost)) =
        (placed_copies, balance_excess, instances_by_priority, cost)
    else {
        return None;
    };
    (issues.len() == before).then(|| crate::plan::Objective {
        placed_copies,
        balance_excess,
        instances_by_priority,
        cost_micros: crate::plan::to_micros(cost),
        cost_unit,
    })
}

/// What reading produced before semantic validation.
struct Read {
    scenario: Scenario,
    /// Type errors and unknown-key errors, in document order.
    issues: Vec<Issue>,
    /// The one unknown-keys warning, if any key was ignored.
    warning: Option<Warning>,
    /// Numbers whose text differs from how the parsed value prints (big integers, `1e3`), by
    /// path: messages echo them as written.
    raw_numbers: BTreeMap<String, String>,
    /// A list was over its size limit: `issues` say which, and nothing else was read.
    oversized: bool,
}

/// Parses, reads and checks keys. `Err` only for a document that is not JSON at all.
fn read_scenario(text: &str, options: &ReadOptions) -> Result<Read, ValidationError> {
    Ok(read_parsed(parse_limited(text, true)?, options))
}

/// Reads a parsed document and checks its keys.
fn read_parsed(parsed: Parsed, options: &ReadOptions) -> Read {
    if !parsed.oversized.is_empty() {
        // Contract §1.4: oversized lists are reported together and nothing else is checked.
        return Read {
            scenario: Scenario::default(),
            issues: parsed.oversized,
            warning: None,
            raw_numbers: BTreeMap::new(),
            oversized: true,
        };
    }
    let mut reader = Reader { issues: Vec::new(), known: BTreeMap::new(), raw_numbers: &parsed.raw_numbers };
    let scenario = reader.scenario(&parsed.value);
    let mut issues = reader.issues;
    issues
        .extend(parsed.duplicates.into_iter().map(|path| Issue::new(IssueKind::DuplicateKey, path, "key given twice")));
    let mut unknown = Vec::new();
    unknown_keys(&parsed.value, &mut String::new(), &reader.known, &mut unknown);
    let mut ignored = Vec::new();
    for key in unknown {
        match (key.suggestion, options.strict) {
            (Some(known), _) => {
                issues.push(Issue::new(IssueKind::UnknownKey, key.path, format!("unknown key; did you mean {known}?")))
            }
            (None, true) => issues.push(Issue::new(IssueKind::UnknownKey, key.path, "unknown key")),
            (None, false) => ignored.push(key.path),
        }
    }
    let warning = (!ignored.is_empty()).then(|| Warning {
        kind: WarningKind::UnknownKeys,
        path: String::new(),
        message: format!(
            "{} ignored (fleetplan does not read {}): {}",
            counted(ignored.len() as u64, "unknown key", "unknown keys"),
            if ignored.len() == 1 { "it" } else { "them" },
            ignored.join(", ")
        ),
    });
    Read { scenario, issues, warning, raw_numbers: parsed.raw_numbers, oversized: false }
}

/// A key the reader never looked up, with the known key it most likely misspells.
struct UnknownKey {
    path: String,
    suggestion: Option<&'static str>,
}

/// Collects unknown keys of every object the reader read (objects it never read — under an
/// unknown key or in place of a scalar — are not descended into: their parent is reported).
/// `path` is a buffer holding the value's path; it is restored before returning (one buffer for
/// the whole walk, as a document can hold millions of keys).
fn unknown_keys(
    value: &Value,
    path: &mut String,
    known: &BTreeMap<usize, BTreeSet<&'static str>>,
    out: &mut Vec<UnknownKey>,
) {
    let length = path.len();
    match value {
        Value::Object(map) => {
            let Some(keys) = known.get(&address(map)) else { return };
            for (key, child) in map {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                if keys.contains(key.as_str()) {
                    unknown_keys(child, path, known, out);
                } else {
                    out.push(UnknownKey { path: path.clone(), suggestion: misspelt(key, keys) });
                }
                path.truncate(length);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
                unknown_keys(item, path, known, out);
                path.truncate(length);
            }
        }
        _ => {}
    }
}

/// The known key that `key` looks like a misspelling of: the same letters in another case, or
/// else the nearest key at most two edits away (optimal string alignment: insertions, deletions,
/// substitutions and swaps of neighbours; on a tie the one whose length is closest, as a
/// mistyped letter is likelier than a lost or doubled one; then by name). Keys whose lengths
/// differ by more than two are skipped without computing a distance: real payloads carry
/// thousands of unknown keys.
pub(crate) fn misspelt(key: &str, known: &BTreeSet<&'static str>) -> Option<&'static str> {
    if let Some(same) = known.iter().find(|candidate| candidate.eq_ignore_ascii_case(key)) {
        return Some(same);
    }
    known
        .iter()
        .filter(|candidate| key.len().abs_diff(candidate.len()) <= 2)
        .map(|candidate| {
            let distance = strsim::osa_distance(key, candidate);
            (distance, key.len().abs_diff(candidate.len()), *candidate)
        })
        .filter(|&(distance, _, _)| distance <= 2)
        .min()
        .map(|(_, _, candidate)| candidate)
}

/// Identity of an object within the parsed document (the document outlives every use).
fn address(map: &Map<String, Value>) -> usize {
    std::ptr::from_ref(map) as usize
}

/// The parsed document and what the parse step found that `serde_json::Value` would hide.
struct Parsed {
    value: Value,
    /// Paths of keys given twice in one object.
    duplicates: Vec<String>,
    raw_numbers: BTreeMap<String, String>,
    /// Lists cut at their size limit while parsing (see [`parse_limited`]).
    oversized: Vec<Issue>,
}

/// Parses any JSON document with the scenario reader's care: every key given twice is named by
/// its path, a number out of range is an error with its path, malformed JSON is one clear error.
/// Returns the value and the paths of duplicate keys.
pub(crate) fn parse_document(text: &str) -> Result<(Value, Vec<String>), ValidationError> {
    parse(text).map(|parsed| (parsed.value, parsed.duplicates))
}

fn parse(text: &str) -> Result<Parsed, ValidationError> {
    parse_limited(text, false)
}

/// [`parse`]; with `limit_lists`, the scenario's size-limited lists (contract §1.4) keep at most
/// their limit of entries: the rest is parsed one entry at a time and dropped, so an oversized
/// list costs neither the memory of holding it nor the time of reading it (a million
/// `CapacityEvents` took seconds and gigabytes before).
fn parse_limited(text: &str, limit_lists: bool) -> Result<Parsed, ValidationError> {
    let mut state = ParseState { numbers: number_tokens(text), limit_lists, ..ParseState::default() };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let result = ValueSeed(&mut state).deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match result {
        Ok(value) => Ok(Parsed {
            value,
            duplicates: state.duplicates,
            raw_numbers: state.raw_numbers,
            oversized: {
                let mut oversized = state.oversized;
                oversized.sort_by_key(|(order, _)| *order);
                oversized.into_iter().map(|(_, issue)| issue).collect()
            },
        }),
        Err(error) if error.to_string().starts_with("number out of range") => {
            // The path stack still names the value being parsed when the error was raised.
            let written = state.numbers.get(state.next_number).copied().unwrap_or("?");
            Err(ValidationError::new(vec![Issue::new(
                IssueKind::OutOfRange,
                state.path_text(),
                format!("number out of range: {}", shorten(written, 40)),
            )]))
        }
        Err(error) => {
            Err(ValidationError::new(vec![Issue::new(IssueKind::Malformed, "", format!("malformed JSON: {error}"))]))
        }
    }
}

/// Every number token of a JSON text, in document order (strings skipped). serde_json visits
/// numbers in the same order, so the n-th visited number was written as the n-th token.
fn number_tokens(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'"' => {
                index += 1;
                while let Some(&inner) = bytes.get(index) {
                    index += if inner == b'\\' { 2 } else { 1 };
                    if inner == b'"' {
                        break;
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = index;
                while bytes.get(index).is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
                    index += 1;
                }
                tokens.push(text.get(start..index).unwrap_or(""));
            }
            _ => index += 1,
        }
    }
    tokens
}

#[derive(Default)]
struct ParseState<'t> {
    numbers: Vec<&'t str>,
    next_number: usize,
    /// Keys and indices from the root to the value being parsed.
    path: Vec<Segment>,
    duplicates: Vec<String>,
    raw_numbers: BTreeMap<String, String>,
    /// Whether the scenario's size-limited lists are cut at their limit while parsing.
    limit_lists: bool,
    /// Lists longer than their limit: one issue each, with the list's place in the report order.
    oversized: Vec<(usize, Issue)>,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl ParseState<'_> {
    /// The size limit of the array being parsed, when it is one of the scenario's limited lists
    /// (with its place in the order they are reported).
    fn list_limit(&self) -> Option<(usize, usize)> {
        if !self.limit_lists {
            return None;
        }
        match self.path.as_slice() {
            [Segment::Key(key)] => crate::problem::list_limit(key),
            [Segment::Key(parent), Segment::Key(key)] if parent == "Fleet" => {
                crate::problem::list_limit(&format!("Fleet.{key}"))
            }
            _ => None,
        }
    }

    fn path_text(&self) -> String {
        let mut text = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(key) => text = join(&text, key),
                Segment::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text
    }

    /// Consumes the next number token; keeps it when it does not print back as written.
    fn number(&mut self, value: Value) -> Value {
        if let Some(written) = self.numbers.get(self.next_number).copied() {
            let printed = value.to_string();
            if printed != written {
                let path = self.path_text();
                self.raw_numbers.insert(path, written.to_string());
            }
        }
        self.next_number += 1;
        value
    }
}

/// Builds a [`Value`] like serde_json does, but records duplicate keys and number texts.
struct ValueSeed<'s, 't>(&'s mut ParseState<'t>);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(self.0.number(Value::from(value)))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(self.0.number(Value::from(value)))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(self.0.number(Value::from(value)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let state = self.0;
        let (order, limit) = state.list_limit().unwrap_or((0, usize::MAX));
        let mut items = Vec::new();
        let mut length = 0usize;
        loop {
            state.path.push(Segment::Index(length));
            let Some(item) = access.next_element_seed(ValueSeed(&mut *state))? else {
                state.path.pop();
                break;
            };
            state.path.pop();
            length += 1;
            if length <= limit {
                items.push(item);
            }
        }
        if length > limit {
            let issue = Issue::new(
                IssueKind::TooLarge,
                state.path_text(),
                format!("{length} entries; at most {limit} are accepted (size limits)"),
            );
            state.oversized.push((order, issue));
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let state = self.0;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            state.path.push(Segment::Key(key.clone()));
            let value = access.next_value_seed(ValueSeed(&mut *state))?;
            // Keep the last value, as serde_json does, so the rest of the document reads as the
            // user most likely meant; the duplicate itself is an error.
            if map.insert(key, value).is_some() {
                state.duplicates.push(state.path_text());
            }
            state.path.pop();
        }
        Ok(Value::Object(map))
    }
}

/// Whether a type error at `typed` explains a semantic issue at `semantic`: the issue is about
/// the defaulted field itself or something inside it, or about the object directly holding it
/// (e.g. "one of Specification or Specifications is required" after `Specification` had the
/// wrong type). A list-level issue such as "6 pools given" is not explained by a type error deep
/// inside one entry, and `X[1]` is not a prefix of `X[10]`.
fn shadows(typed: &str, semantic: &str) -> bool {
    let is_boundary = |rest: &str| rest.is_empty() || rest.starts_with('.') || rest.starts_with('[');
    if let Some(rest) = semantic.strip_prefix(typed) {
        if is_boundary(rest) {
            return true;
        }
    }
    match typed.strip_prefix(semantic) {
        Some(rest) if !semantic.is_empty() && is_boundary(rest) => {
            // Only an immediate child: one key or one index below the issue's path.
            let child = rest.get(1..).unwrap_or("");
            !child.contains('.') && !child.contains('[')
        }
        _ => false,
    }
}

/// Describes a JSON value for an error message: strings quoted, long values cut.
pub(crate) fn describe(value: &Value) -> String {
    shorten(&value.to_string(), 40).into_owned()
}

struct Reader<'p> {
    issues: Vec<Issue>,
    /// Keys looked up per object (by [`address`]): the known keys of that object.
    known: BTreeMap<usize, BTreeSet<&'static str>>,
    raw_numbers: &'p BTreeMap<String, String>,
}

impl Reader<'_> {
    fn error(&mut self, kind: IssueKind, path: &str, message: String) {
        self.issues.push(Issue::new(kind, path, message));
    }

    /// A value described for a message: a number as it was written, anything else by [`describe`].
    fn describe_at(&self, value: &Value, path: &str) -> String {
        match self.raw_numbers.get(path) {
            Some(written) if value.is_number() => shorten(written, 40).into_owned(),
            _ => describe(value),
        }
    }

    fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => {
                self.known.entry(address(map)).or_default();
                Some(map)
            }
            other => {
                let found = self.describe_at(other, path);
                let kind = if path.is_empty() { IssueKind::Malformed } else { IssueKind::TypeMismatch };
                self.error(kind, path, format!("expected an object, found {found}"));
                None
            }
        }
    }

    /// A field that may be absent or null. Every key the reader reads passes through here,
    /// which makes it a known key of its object.
    fn field<'v>(&mut self, map: &'v Map<String, Value>, key: &'static str) -> Option<&'v Value> {
        self.known.entry(address(map)).or_default().insert(key);
        map.get(key).filter(|value| !value.is_null())
    }

    fn required<'v>(&mut self, map: &'v Map<String, Value>, key: &'static str, path: &str) -> Option<&'v Value> {
        let value = self.field(map, key);
        if value.is_none() {
            self.error(IssueKind::MissingField, &join(path, key), "is required".to_string());
        }
        value
    }

    fn string(&mut self, value: &Value, path: &str) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => {
                let found = self.describe_at(other, path);
                self.error(IssueKind::TypeMismatch, path, format!("expected a string, found {found}"));
                String::new()
            }
        }
    }

    fn number(&mut self, value: &Value, path: &str) -> f64 {
        match value.as_f64() {
            Some(number) => number,
            None => {
                let found = self.describe_at(value, path);
                self.error(IssueKind::TypeMismatch, path, format!("expected a number, found {found}"));
                0.0
            }
        }
    }

    fn integer(&mut self, value: &Value, path: &str) -> f64 {
        match value.as_f64() {
            Some(number) if number.fract() == 0.0 => number,
            _ => {
                let found = self.describe_at(value, path);
                let kind = if value.is_number() { IssueKind::NotAWholeNumber } else { IssueKind::TypeMismatch };
                self.error(kind, path, format!("expected an integer, found {found}"));
                0.0
            }
        }
    }

    fn boolean(&mut self, value: &Value, path: &str) -> bool {
        match value {
            Value::Bool(flag) => *flag,
            other => {
                let found = self.describe_at(other, path);
                self.error(IssueKind::TypeMismatch, path, format!("expected true or false, found {found}"));
                false
            }
        }
    }

    fn array<'v>(&mut self, value: &'v Value, path: &str) -> &'v [Value] {
        match value {
            Value::Array(items) => items,
            other => {
                let found = self.describe_at(other, path);
                self.error(IssueKind::TypeMismatch, path, format!("expected an array, found {found}"));
                &[]
            }
        }
    }

    fn opt_string(&mut self, map: &Map<String, Value>, key: &'static str, path: &str) -> Option<String> {
        let value = self.field(map, key)?;
        Some(self.string(value, &join(path, key)))
    }

    fn req_string(&mut self, map: &Map<String, Value>, key: &'static str, path: &str) -> String {
        match self.required(map, key, path) {
            Some(value) => self.string(value, &join(path, key)),
            None => String::new(),
        }
    }

    /// An optional whole number; `None` when absent or of the wrong type. A field with a type
    /// error reads as absent, never as a default: a made-up 0 would be checked against other
    /// fields (`Time: 100 is after Now (0)`) and add errors the input does not have.
    fn opt_integer(&mut self, map: &Map<String, Value>, key: &'static str, path: &str) -> Option<f64> {
        let value = self.field(map, key)?;
        let errors = self.issues.len();
        let number = self.integer(value, &join(path, key));
        (self.issues.len() == errors).then_some(number)
    }

    /// An optional number; `None` when absent or of the wrong type (see [`Self::opt_integer`]).
    fn opt_number(&mut self, map: &Map<String, Value>, key: &'static str, path: &str) -> Option<f64> {
        let value = self.field(map, key)?;
        let errors = self.issues.len();
        let number = self.number(value, &join(path, key));
        (self.issues.len() == errors).then_some(number)
    }

    fn list<T>(
        &mut self,
        map: &Map<String, Value>,
        key: &'static str,
        path: &str,
        mut item: impl FnMut(&mut Self, &Value, &str) -> T,
    ) -> Vec<T> {
        let Some(value) = self.field(map, key) else { return Vec::new() };
        let list_path = join(path, key);
        let items = self.array(value, &list_path);
        items.iter().enumerate().map(|(index, value)| item(self, value, &format!("{list_path}[{index}]"))).collect()
    }

    fn scenario(&mut self, value: &Value) -> Scenario {
        let mut scenario = Scenario::default();
        let Some(map) = self.object(value, "") else { return scenario };
        scenario.availability_zones = match self.required(map, "AvailabilityZones", "") {
            Some(_) => self.list(map, "AvailabilityZones", "", |reader, value, path| reader.string(value, path)),
            None => Vec::new(),
        };
        scenario.instance_types = self.list(map, "InstanceTypes", "", Self::instance_type);
        scenario.capacity = self.list(map, "Capacity", "", Self::capacity);
        if let Some(endpoint) = self.required(map, "Endpoint", "") {
            scenario.endpoint = self.endpoint(endpoint, "Endpoint");
        }
        scenario.inference_components = self.list(map, "InferenceComponents", "", Self::component);
        if let Some(fleet) = self.field(map, "Fleet") {
            scenario.fleet = self.fleet(fleet, "Fleet");
        }
        scenario.now = self.opt_integer(map, "Now", "");
        scenario.capacity_error_ttl_seconds = self.opt_integer(map, "CapacityErrorTtlSeconds", "");
        scenario.capacity_events = self.list(map, "CapacityEvents", "", Self::capacity_event);
        scenario
    }

    fn capacity_event(&mut self, value: &Value, path: &str) -> CapacityEvent {
        let mut event = CapacityEvent::default();
        let Some(map) = self.object(value, path) else { return event };
        event.instance_type = self.req_string(map, "InstanceType", path);
        event.availability_zone = self.req_string(map, "AvailabilityZone", path);
        event.event = self.req_string(map, "Event", path);
        if let Some(time) = self.required(map, "Time", path) {
            event.time = self.integer(time, &join(path, "Time"));
        }
        event
    }

    fn instance_type(&mut self, value: &Value, path: &str) -> InstanceTypeSpec {
        let mut spec = InstanceTypeSpec::default();
        let Some(map) = self.object(value, path) else { return spec };
        spec.instance_type = self.req_string(map, "InstanceType", path);
        for (key, slot, integer) in [
            ("AcceleratorCount", &mut spec.accelerator_count, true),
            ("VCpuCount", &mut spec.v_cpu_count, false),
            ("MemoryInMb", &mut spec.memory_in_mb, false),
        ] {
            if let Some(value) = self.required(map, key, path) {
                let field_path = join(path, key);
                *slot = if integer { self.integer(value, &field_path) } else { self.number(value, &field_path) };
            }
        }
        spec.accelerator_memory_gib = self.opt_number(map, "AcceleratorMemoryGiB", path).unwrap_or(0.0);
        spec.hourly_price = self.opt_number(map, "HourlyPrice", path);
        spec
    }

    fn capacity(&mut self, value: &Value, path: &str) -> CapacityEntry {
        let mut entry = CapacityEntry::default();
        let Some(map) = self.object(value, path) else { return entry };
        entry.instance_type = self.req_string(map, "InstanceType", path);
        entry.availability_zone = self.req_string(map, "AvailabilityZone", path);
        entry.available = self.opt_integer(map, "Available", path);
        entry.reserved = self.opt_integer(map, "Reserved", path).unwrap_or(0.0);
        entry
    }

    fn endpoint(&mut self, value: &Value, path: &str) -> Endpoint {
        let mut endpoint = Endpoint::default();
        let Some(map) = self.object(value, path) else { return endpoint };
        endpoint.endpoint_name = self.opt_string(map, "EndpointName", path).unwrap_or_default();
        endpoint.variant_name = self.opt_string(map, "VariantName", path).unwrap_or_default();
        endpoint.model_name = self.opt_string(map, "ModelName", path);
        endpoint.instance_type = self.opt_string(map, "InstanceType", path);
        endpoint.instance_pools = self.list(map, "InstancePools", path, |reader, value, path| {
            let mut pool = InstancePool::default();
            let Some(map) = reader.object(value, path) else { return pool };
            pool.instance_type = reader.req_string(map, "InstanceType", path);
            pool.priority = match reader.required(map, "Priority", path) {
                Some(value) => reader.integer(value, &join(path, "Priority")),
                None => 0.0,
            };
            pool.model_name_override = reader.opt_string(map, "ModelNameOverride", path);
            pool
        });
        // `InitialInstanceCount` is the alias the model derive accepts too (contract §1).
        let desired = self.opt_integer(map, "DesiredInstanceCount", path);
        let initial = self.opt_integer(map, "InitialInstanceCount", path);
        if desired.is_some() && initial.is_some() {
            self.error(
                IssueKind::Conflict,
                &join(path, "InitialInstanceCount"),
                "give DesiredInstanceCount or its alias InitialInstanceCount, not both".to_string(),
            );
        }
        endpoint.desired_instance_count = desired.or(initial);
        if let Some(scaling) = self.field(map, "ManagedInstanceScaling") {
            let scaling_path = join(path, "ManagedInstanceScaling");
            endpoint.managed_instance_scaling = self.scaling(scaling, &scaling_path);
        }
        endpoint
    }

    fn scaling(&mut self, value: &Value, path: &str) -> Option<ManagedInstanceScaling> {
        let map = self.object(value, path)?;
        let mut scaling = ManagedInstanceScaling {
            status: self.opt_string(map, "Status", path),
            min_instance_count: self.opt_integer(map, "MinInstanceCount", path),
            max_instance_count: self.opt_integer(map, "MaxInstanceCount", path),
            scale_in_policy: None,
        };
        if let Some(policy) = self.field(map, "ScaleInPolicy") {
            let policy_path = join(path, "ScaleInPolicy");
            if let Some(policy_map) = self.object(policy, &policy_path) {
                scaling.scale_in_policy = Some(ScaleInPolicySpec {
                    strategy: self.opt_string(policy_map, "Strategy", &policy_path),
                    cooldown_in_minutes: self.opt_integer(policy_map, "CooldownInMinutes", &policy_path),
                    maximum_step_size: self.opt_integer(policy_map, "MaximumStepSize", &policy_path),
                });
            }
        }
        Some(scaling)
    }

    fn component(&mut self, value: &Value, path: &str) -> InferenceComponent {
        let mut component = InferenceComponent::default();
        let Some(map) = self.object(value, path) else { return component };
        component.inference_component_name = self.req_string(map, "InferenceComponentName", path);
        if let Some(spec) = self.field(map, "Specification") {
            component.specification = Some(self.specification(spec, &join(path, "Specification")));
        }
        if self.field(map, "Specifications").is_some() {
            component.specifications = Some(self.list(map, "Specifications", path, Self::specification));
        }
        if let Some(runtime) = self.required(map, "RuntimeConfig", path) {
            let runtime_path = join(path, "RuntimeConfig");
            if let Some(runtime_map) = self.object(runtime, &runtime_path) {
                if let Some(count) = self.required(runtime_map, "CopyCount", &runtime_path) {
                    component.runtime_config.copy_count = self.integer(count, &join(&runtime_path, "CopyCount"));
                }
            }
        }
        component
    }

    fn specification(&mut self, value: &Value, path: &str) -> ComponentSpecification {
        let mut spec = ComponentSpecification::default();
        let Some(map) = self.object(value, path) else { return spec };
        spec.instance_type = self.opt_string(map, "InstanceType", path);
        spec.model_name = self.opt_string(map, "ModelName", path);
        if let Some(requirements) = self.required(map, "ComputeResourceRequirements", path) {
            let requirements_path = join(path, "ComputeResourceRequirements");
            if let Some(requirements_map) = self.object(requirements, &requirements_path) {
                let requirements = &mut spec.compute_resource_requirements;
                requirements.number_of_accelerator_devices_required =
                    self.opt_integer(requirements_map, "NumberOfAcceleratorDevicesRequired", &requirements_path);
                requirements.number_of_cpu_cores_required =
                    self.opt_number(requirements_map, "NumberOfCpuCoresRequired", &requirements_path);
                if let Some(memory) = self.required(requirements_map, "MinMemoryRequiredInMb", &requirements_path) {
                    requirements.min_memory_required_in_mb =
                        self.number(memory, &join(&requirements_path, "MinMemoryRequiredInMb"));
                }
            }
        }
        if let Some(config) = self.field(map, "SchedulingConfig") {
            let config_path = join(path, "SchedulingConfig");
            if let Some(config_map) = self.object(config, &config_path) {
                let mut scheduling = SchedulingConfig {
                    placement_strategy: self.opt_string(config_map, "PlacementStrategy", &config_path),
                    availability_zone_balance: None,
                };
                if let Some(balance) = self.field(config_map, "AvailabilityZoneBalance") {
                    let balance_path = join(&config_path, "AvailabilityZoneBalance");
                    if let Some(balance_map) = self.object(balance, &balance_path) {
                        scheduling.availability_zone_balance = Some(AvailabilityZoneBalance {
                            enforcement_mode: self.opt_string(balance_map, "EnforcementMode", &balance_path),
                            max_imbalance: self.opt_integer(balance_map, "MaxImbalance", &balance_path),
                        });
                    }
                }
                spec.scheduling_config = Some(scheduling);
            }
        }
        spec
    }

    fn fleet(&mut self, value: &Value, path: &str) -> Fleet {
        let mut fleet = Fleet::default();
        let Some(map) = self.object(value, path) else { return fleet };
        fleet.instances = self.list(map, "Instances", path, |reader, value, path| {
            let mut instance = FleetInstance::default();
            let Some(map) = reader.object(value, path) else { return instance };
            instance.instance_id = reader.req_string(map, "InstanceId", path);
            instance.instance_type = reader.req_string(map, "InstanceType", path);
            instance.availability_zone = reader.req_string(map, "AvailabilityZone", path);
            if let Some(flag) = reader.field(map, "Reserved") {
                instance.reserved = reader.boolean(flag, &join(path, "Reserved"));
            }
            instance.state = reader.opt_string(map, "State", path);
            instance
        });
        fleet.copies = self.list(map, "Copies", path, |reader, value, path| {
            let mut copy = FleetCopy { copy_count: 1.0, ..Default::default() };
            let Some(map) = reader.object(value, path) else { return copy };
            copy.inference_component_name = reader.req_string(map, "InferenceComponentName", path);
            copy.instance_id = reader.req_string(map, "InstanceId", path);
            // Absent means one copy; a type error reads as none, which no other check can trip on.
            copy.copy_count = match reader.field(map, "CopyCount") {
                Some(count) => reader.integer(count, &join(path, "CopyCount")),
                None => 1.0,
            };
            copy
        });
        fleet
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_name_every_path() {
        let text = r#"{"AvailabilityZones": ["a"], "Endpoint": {"InstancePools": [{"InstanceType": 3, "Priority": "one"}]},
            "InferenceComponents": [{"InferenceComponentName": "x", "RuntimeConfig": {"CopyCount": "four"}}]}"#;
        let error = scenario_from_json(text).unwrap_err();
        let messages: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            vec![
                "Endpoint.InstancePools[0].InstanceType: expected a string, found 3",
                "Endpoint.InstancePools[0].Priority: expected an integer, found \"one\"",
                "InferenceComponents[0].RuntimeConfig.CopyCount: expected an integer, found \"four\"",
            ]
        );
    }

    /// Issue 18, defect 8: a type error inside a plan names the field, not its parent.
    #[test]
    fn plan_type_errors_name_the_field() {
        let text = r#"{"Actions": [
                {"Type": "PlaceCopy", "InferenceComponentName": "llm", "InstanceId": 5},
                {"Type": "LaunchInstance", "InstanceId": "new-1", "InstanceType": "t", "AvailabilityZone": "a", "Reserved": "yes"},
                {"Type": "RemoveCopy", "InstanceId": "i-1"},
                {"Type": "Teleport"},
                {"Type": "TerminateInstance", "InstanceId": "i-2"}],
            "Unplaced": [{"InferenceComponentName": "llm", "CopyCount": "two"}],
            "Objective": {"PlacedCopies": -1, "BalanceExcess": 0, "InstancesByPriority": {}, "Cost": 0},
            "Bound": {"PlacedCopies": 1, "BalanceExcess": 0, "InstancesByPriority": {}, "Cost": "free"}}"#;
        let error = plan_from_json(text).unwrap_err();
        let messages: Vec<String> = error.issues().iter().map(ToString::to_string).collect();
        let paths: Vec<&str> = error.issues().iter().map(|issue| issue.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "Actions[0].InstanceId",
                "Actions[1].Reserved",
                "Actions[2].InferenceComponentName",
                "Actions[3].Type",
                "Unplaced[0].CopyCount",
                "Objective.PlacedCopies",
                "Bound.Cost",
            ],
            "{messages:#?}"
        );
        assert_eq!(messages[0], "Actions[0].InstanceId: expected a string, found 5");
        assert_eq!(messages[2], "Actions[2].InferenceComponentName: is required");
        // The good parts still read as before.
        let plan = plan_from_json(
            r#"{"Actions": [{"Type": "TerminateInstance", "InstanceId": "i-2"}],
                "Objective": {"PlacedCopies": 1, "BalanceExcess": 0, "InstancesByPriority": {"2": 1}, "Cost": 1.5}}"#,
        )
        .unwrap();
        assert_eq!(plan.actions, vec![crate::plan::Action::TerminateInstance { instance_id: "i-2".into() }]);
        assert_eq!(plan.objective.instances_by_priority, [(2, 1)].into());
        assert_eq!(plan.objective.cost_micros, 1_500_000);
        assert!(plan.omitted.cost_unit && plan.omitted.unplaced && plan.omitted.status);
    }

    #[test]
    fn type_errors_shadow_only_their_own_follow_on_issues() {
        assert!(shadows("A.B", "A.B"));
        assert!(shadows("A.B", "A.B.C"));
        assert!(shadows("A[1]", "A[1].C"));
        assert!(shadows("A[1].Specification", "A[1]"));
        assert!(!shadows("A[1]", "A[10].C"));
        assert!(!shadows("A.InstancePools[5].Priority", "A.InstancePools"));
        assert!(!shadows("A.B", "A.BC"));
    }

    #[test]
    fn malformed_json_is_one_clear_error() {
        let error = scenario_from_json("{").unwrap_err();
        assert!(error.to_string().starts_with("malformed JSON"), "{error}");
    }

    #[test]
    fn number_tokens_skip_strings_and_keep_the_written_text() {
        let text = r#"{"a\"1": [1e3, -2, "7", 12345678901234567890], "b": 0.50}"#;
        assert_eq!(number_tokens(text), vec!["1e3", "-2", "12345678901234567890", "0.50"]);
    }

    #[test]
    fn misspellings_are_case_changes_or_at_most_two_edits() {
        let known: BTreeSet<&'static str> = ["MaxImbalance", "EnforcementMode"].into_iter().collect();
        assert_eq!(misspelt("maximbalance", &known), Some("MaxImbalance"));
        assert_eq!(misspelt("MaxImbalence", &known), Some("MaxImbalance"));
        assert_eq!(misspelt("MaxImblance", &known), Some("MaxImbalance"));
        assert_eq!(misspelt("MaxImbal", &known), None);
        assert_eq!(misspelt("EndpointArn", &known), None);
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let text =
            r#"{"AvailabilityZones": ["a"], "Tags": [1], "Endpoint": {"InstanceType": "ml.g5.xlarge", "Foo": 1}}"#;
        let scenario = scenario_from_json(text).unwrap();
        assert_eq!(scenario.endpoint.instance_type.as_deref(), Some("ml.g5.xlarge"));
        assert_eq!(scenario.availability_zones, vec!["a".to_string()]);
    }
}
