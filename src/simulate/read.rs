//! Reading a [`Script`] from JSON by walking a [`serde_json::Value`], as `src/json.rs` reads
//! scenarios: every type error, unknown or misspelt key and key given twice is reported with
//! its path and value, all at once, never a panic.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::script::{
    scenario_issues, AzOutage, CloudCapacity, LaunchFailureWindow, PlannerChoice, ScaleEvent, Script,
    DEFAULT_EXACT_NODE_LIMIT, DEFAULT_TICK_SECONDS, EVENTS_GIVEN, NOW_GIVEN,
};
use crate::control::LaunchFailure;
use crate::error::{Issue, IssueKind, ValidationError};
use crate::json::{describe, misspelt, parse_document, scenario_and_problem_from_json, ReadOptions};
use crate::problem::Problem;

const TOP_KEYS: &[&str] = &[
    "Scenario",
    "Ticks",
    "TickSeconds",
    "Planner",
    "ExactNodeLimit",
    "ConsolidateEvery",
    "RebalanceEvery",
    "ConsolidateNodeLimit",
    "RebalanceNodeLimit",
    "LaunchTicks",
    "CloudCapacity",
    "ScaleEvents",
    "LaunchFailures",
    "AzOutages",
];
const CAPACITY_KEYS: &[&str] = &["Tick", "InstanceType", "AvailabilityZone", "Available"];
const SCALE_KEYS: &[&str] = &["Tick", "InferenceComponentName", "CopyCount"];
const FAILURE_KEYS: &[&str] = &["FromTick", "UntilTick", "InstanceType", "AvailabilityZone", "Error"];
const OUTAGE_KEYS: &[&str] = &["FromTick", "UntilTick", "AvailabilityZone"];

/// Collects issues while reading.
struct Reader {
    issues: Vec<Issue>,
}

impl Reader {
    fn error(&mut self, kind: IssueKind, path: &str, message: String) {
        self.issues.push(Issue::new(kind, path, message));
    }

    /// The object at `path`, its keys checked against `known` (a key that is not known is an
    /// error, naming the known key it looks like).
    fn object<'v>(&mut self, value: &'v Value, path: &str, known: &[&'static str]) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = value else {
            self.error(IssueKind::TypeMismatch, path, format!("expected an object, found {}", describe(value)));
            return None;
        };
        let known_set: BTreeSet<&'static str> = known.iter().copied().collect();
        for key in map.keys().filter(|key| !known_set.contains(key.as_str())) {
            let message = match misspelt(key, &known_set) {
                Some(suggestion) => format!("unknown key; did you mean {suggestion}?"),
                None => format!("unknown key; known keys: {}", known.join(", ")),
            };
            self.error(IssueKind::UnknownKey, &join(path, key), message);
        }
        Some(map)
    }

    /// A whole number in `0..=u32::MAX` (script ranges are checked by [`Script::validate`]).
    fn whole(&mut self, value: &Value, path: &str) -> Option<u32> {
        match value {
            Value::Number(number) => match number.as_u64().map(u32::try_from) {
                Some(Ok(whole)) => Some(whole),
                _ if number.as_f64().is_some_and(|float| float.fract() == 0.0 && float >= 0.0) => {
                    self.error(IssueKind::OutOfRange, path, format!("{number} is too large"));
                    None
                }
                _ => {
                    let kind = if number.as_f64().is_some_and(|float| float.fract() != 0.0) {
                        IssueKind::NotAWholeNumber
                    } else {
                        IssueKind::OutOfRange
                    };
                    self.error(kind, path, format!("expected a whole number ≥ 0, found {number}"));
                    None
                }
            },
            other => {
                self.error(
                    IssueKind::TypeMismatch,
                    path,
                    format!("expected a whole number, found {}", describe(other)),
                );
                None
            }
        }
    }

    fn required<'v>(&mut self, map: &'v Map<String, Value>, key: &str, path: &str) -> Option<&'v Value> {
        let value = map.get(key).filter(|value| !value.is_null());
        if value.is_none() {
            self.error(IssueKind::MissingField, &join(path, key), "is required".to_string());
        }
        value
    }

    fn required_whole(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<u32> {
        let value = self.required(map, key, path)?;
        self.whole(value, &join(path, key))
    }

    fn optional_whole(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<u32> {
        let value = map.get(key).filter(|value| !value.is_null())?;
        self.whole(value, &join(path, key))
    }

    fn required_string(&mut self, map: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match self.required(map, key, path)? {
            Value::String(text) => Some(text.clone()),
            other => {
                self.error(
                    IssueKind::TypeMismatch,
                    &join(path, key),
                    format!("expected a string, found {}", describe(other)),
                );
                None
            }
        }
    }

    /// The entries of an optional array, each read by `read` at `Key[i]`.
    fn list<T>(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        read: impl Fn(&mut Reader, &Value, &str) -> Option<T>,
    ) -> Vec<T> {
        match map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| read(self, item, &format!("{key}[{index}]")))
                .collect(),
            Some(other) => {
                self.error(IssueKind::TypeMismatch, key, format!("expected an array, found {}", describe(other)));
                Vec::new()
            }
        }
    }

    /// An optional top-level node limit (a whole number; its range is checked by
    /// [`Script::validate`]).
    fn node_limit(&mut self, map: &Map<String, Value>, key: &str) -> Option<u64> {
        match map.get(key).filter(|value| !value.is_null())? {
            Value::Number(number) => {
                let limit = number.as_u64();
                if limit.is_none() {
                    let kind = if number.as_f64().is_some_and(|float| float.fract() != 0.0) {
                        IssueKind::NotAWholeNumber
                    } else {
                        IssueKind::OutOfRange
                    };
                    self.error(kind, key, format!("expected a whole number ≥ 1, found {number}"));
                }
                limit
            }
            other => {
                self.error(IssueKind::TypeMismatch, key, format!("expected a whole number, found {}", describe(other)));
                None
            }
        }
    }

    fn capacity(&mut self, value: &Value, path: &str) -> Option<CloudCapacity> {
        let map = self.object(value, path, CAPACITY_KEYS)?;
        let tick = self.required_whole(map, "Tick", path);
        let instance_type = self.required_string(map, "InstanceType", path);
        let availability_zone = self.required_string(map, "AvailabilityZone", path);
        // `null` or absent: unlimited, as in a scenario's `Capacity`.
        let available = match map.get("Available") {
            None | Some(Value::Null) => Some(None),
            Some(value) => self.whole(value, &join(path, "Available")).map(Some),
        };
        Some(CloudCapacity {
            tick: tick?,
            instance_type: instance_type?,
            availability_zone: availability_zone?,
            available: available?,
        })
    }

    fn scale(&mut self, value: &Value, path: &str) -> Option<ScaleEvent> {
        let map = self.object(value, path, SCALE_KEYS)?;
        let tick = self.required_whole(map, "Tick", path);
        let component = self.required_string(map, "InferenceComponentName", path);
        let copy_count = self.required_whole(map, "CopyCount", path);
        Some(ScaleEvent { tick: tick?, component: component?, copy_count: copy_count? })
    }

    fn failure(&mut self, value: &Value, path: &str) -> Option<LaunchFailureWindow> {
        let map = self.object(value, path, FAILURE_KEYS)?;
        let from_tick = self.required_whole(map, "FromTick", path);
        let until_tick = self.required_whole(map, "UntilTick", path);
        let instance_type = self.required_string(map, "InstanceType", path);
        let availability_zone = self.required_string(map, "AvailabilityZone", path);
        let failure = match self.required_string(map, "Error", path)?.as_str() {
            "InsufficientCapacity" => Some(LaunchFailure::InsufficientCapacity),
            "ProvisioningTimeout" => Some(LaunchFailure::ProvisioningTimeout),
            other => {
                self.error(
                    IssueKind::InvalidValue,
                    &join(path, "Error"),
                    format!("{other:?} is not InsufficientCapacity or ProvisioningTimeout"),
                );
                None
            }
        };
        Some(LaunchFailureWindow {
            from_tick: from_tick?,
            until_tick: until_tick?,
            instance_type: instance_type?,
            availability_zone: availability_zone?,
            failure: failure?,
        })
    }

    fn outage(&mut self, value: &Value, path: &str) -> Option<AzOutage> {
        let map = self.object(value, path, OUTAGE_KEYS)?;
        let from_tick = self.required_whole(map, "FromTick", path);
        let until_tick = self.required_whole(map, "UntilTick", path);
        let availability_zone = self.required_string(map, "AvailabilityZone", path);
        Some(AzOutage { from_tick: from_tick?, until_tick: until_tick?, availability_zone: availability_zone? })
    }
}

fn join(path: &str, key: &str) -> String {
    // An empty key is shown quoted, so an issue about it still has a path (fuzz finding: a
    // script with the key "" got an unknown-key error without one).
    let key = if key.is_empty() { "\"\"" } else { key };
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Whether an issue at `later` is a consequence of a type error at `typed` (the same field or
/// inside it): such follow-on issues are dropped.
fn shadowed(typed: &[Issue], later: &str) -> bool {
    typed.iter().any(|issue| {
        later == issue.path
            || later
                .strip_prefix(issue.path.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    })
}

/// The script's `Scenario`, read by the scenario reader itself (same messages as `fleetplan
/// plan`), its paths put under `Scenario`; the problem when it is valid.
fn read_scenario(
    reader: &mut Reader,
    given: Option<&Value>,
    options: &ReadOptions,
) -> (crate::model::Scenario, Option<Problem>) {
    let mut scenario_problem = None;
    let mut scenario = crate::model::Scenario::default();
    match given {
        None | Some(Value::Null) => reader.error(IssueKind::MissingField, "Scenario", "is required".to_string()),
        Some(Value::Object(given)) => {
            // The simulator keeps the clock and the events: both keys are refused on their own,
            // and the scenario is read without them (so it never asks for the one left out).
            let mut stripped = given.clone();
            let refused: Vec<(&str, &str)> = [("Now", NOW_GIVEN), ("CapacityEvents", EVENTS_GIVEN)]
                .into_iter()
                .filter(|(key, _)| stripped.remove(*key).is_some_and(|removed| !removed.is_null()))
                .collect();
            match scenario_and_problem_from_json(&Value::Object(stripped).to_string(), options) {
                Ok((read, problem)) => {
                    scenario = read;
                    scenario_problem = Some(problem);
                }
                Err(error) => reader.issues.extend(scenario_issues(&error)),
            }
            for (key, message) in refused {
                reader.error(IssueKind::Conflict, &format!("Scenario.{key}"), message.to_string());
            }
        }
        Some(other) => reader.error(
            IssueKind::TypeMismatch,
            "Scenario",
            format!("expected a scenario object, found {}", describe(other)),
        ),
    }
    (scenario, scenario_problem)
}

/// The planner a script names (greedy unless it says "exact"), with `ExactNodeLimit` for it.
fn read_planner(reader: &mut Reader, map: &Map<String, Value>) -> PlannerChoice {
    let node_limit = reader.node_limit(map, "ExactNodeLimit");
    let planner = map.get("Planner");
    let greedy =
        matches!(planner, None | Some(Value::Null)) || matches!(planner, Some(Value::String(name)) if name == "greedy");
    if greedy && node_limit.is_some() {
        reader.error(IssueKind::Conflict, "ExactNodeLimit", "only applies when Planner is \"exact\"".to_string());
    }
    match planner {
        Some(Value::String(name)) if name == "exact" => {
            PlannerChoice::Exact { node_limit: node_limit.unwrap_or(DEFAULT_EXACT_NODE_LIMIT) }
        }
        Some(other) if !greedy => {
            reader.error(
                IssueKind::InvalidValue,
                "Planner",
                format!("expected \"greedy\" or \"exact\", found {}", describe(other)),
            );
            PlannerChoice::Greedy
        }
        _ => PlannerChoice::Greedy,
    }
}

/// `issues` (the type errors) with the script's range and reference checks, minus those a type
/// error already explains (an entry that failed to read is absent, so only whole-field errors
/// can shadow).
fn with_script_issues(
    mut issues: Vec<Issue>,
    script: &Script,
    scenario_problem: Option<&Problem>,
    ticks: Option<u32>,
) -> Vec<Issue> {
    let typed = issues.clone();
    // Ticks out of range makes every "is not before Ticks" check noise.
    let tick_known = ticks.is_some_and(|ticks| (1..=super::script::MAX_TICKS).contains(&ticks));
    for issue in script.script_issues(scenario_problem) {
        // Without a readable Ticks every tick check would be noise.
        let about_ticks = issue.message.contains("Ticks (");
        // An entry that failed to read is left out, so later indices of its list would be off.
        let list = issue.path.split('[').next().unwrap_or_default();
        let list_broken = issue.path.contains('[')
            && typed.iter().any(|typed| typed.path.strip_prefix(list).is_some_and(|rest| rest.starts_with('[')));
        if !shadowed(&typed, &issue.path) && !list_broken && (tick_known || !about_ticks) {
            issues.push(issue);
        }
    }
    issues
}

/// Reads and validates a script (see [`Script::from_json`]).
pub(crate) fn read_script(text: &str, options: &ReadOptions) -> Result<(Script, Problem), ValidationError> {
    let (document, duplicates) = parse_document(text)?;
    let mut reader = Reader { issues: Vec::new() };
    reader
        .issues
        .extend(duplicates.into_iter().map(|path| Issue::new(IssueKind::DuplicateKey, path, "key given twice")));
    let Some(map) = reader.object(&document, "", TOP_KEYS) else {
        return Err(ValidationError::new(reader.issues));
    };

    let (scenario, scenario_problem) = read_scenario(&mut reader, map.get("Scenario"), options);
    let ticks = map.get("Ticks").filter(|value| !value.is_null());
    let ticks = match ticks {
        Some(value) => reader.whole(value, "Ticks"),
        None => {
            reader.error(IssueKind::MissingField, "Ticks", "is required".to_string());
            None
        }
    };
    let tick_seconds = reader.optional_whole(map, "TickSeconds", "");
    let planner = read_planner(&mut reader, map);
    let consolidate_every = reader.optional_whole(map, "ConsolidateEvery", "");
    let rebalance_every = reader.optional_whole(map, "RebalanceEvery", "");
    let consolidate_node_limit = reader.node_limit(map, "ConsolidateNodeLimit");
    let rebalance_node_limit = reader.node_limit(map, "RebalanceNodeLimit");
    let launch_ticks = reader.optional_whole(map, "LaunchTicks", "");
    let cloud_capacity = reader.list(map, "CloudCapacity", Reader::capacity);
    let scale_events = reader.list(map, "ScaleEvents", Reader::scale);
    let launch_failures = reader.list(map, "LaunchFailures", Reader::failure);
    let az_outages = reader.list(map, "AzOutages", Reader::outage);

    let script = Script {
        scenario,
        ticks: ticks.unwrap_or(1),
        tick_seconds: tick_seconds.unwrap_or(DEFAULT_TICK_SECONDS),
        planner,
        consolidate_every: consolidate_every.unwrap_or(0),
        rebalance_every: rebalance_every.unwrap_or(0),
        consolidate_node_limit,
        rebalance_node_limit,
        launch_ticks: launch_ticks.unwrap_or(0),
        cloud_capacity,
        scale_events,
        launch_failures,
        az_outages,
    };
    let issues = with_script_issues(reader.issues, &script, scenario_problem.as_ref(), ticks);
    match scenario_problem {
        Some(problem) if issues.is_empty() => Ok((script, problem)),
        _ => Err(ValidationError::new(issues)),
    }
}
