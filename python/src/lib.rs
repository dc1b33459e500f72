//! The compiled half of the `fleetplan` Python package: every function takes JSON text in the
//! contract's shapes (docs/contract.md) and returns JSON text. `fleetplan/__init__.py` turns
//! dicts into that text and back, so this crate needs no Python object conversion beyond
//! strings, and the JSON reader's rules (unknown keys, strict mode, limits) apply unchanged.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::time::Duration;

use fleetplan::simulate::{Script, Simulator};
use fleetplan::sizing::{size_pool, ModelDescription};
use fleetplan::{
    verify as verify_plan, Consolidator, ExactPlanner, FinalFleet, GreedyPlanner, Limits, Plan, Problem, ReadOptions,
    Rebalancer, ReliabilityReport, ValidationError,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    InputError,
    PyException,
    "The input is not valid: args are (message, [(kind, path, message), ...])."
);

/// Without an explicit limit the exact planner gets 10 s, as on the command line.
const DEFAULT_EXACT_TIME_LIMIT_MS: u64 = 10_000;

/// An [`InputError`] carrying every issue, each as (kind, path, message); `what` names the
/// document in the message.
fn input_error(what: &str, error: &ValidationError) -> PyErr {
    let issues: Vec<(String, String, String)> = error
        .issues()
        .iter()
        .map(|issue| (format!("{:?}", issue.kind()), issue.path.clone(), issue.message.clone()))
        .collect();
    let count = issues.len();
    let first = error.issues().first().map(ToString::to_string).unwrap_or_default();
    let message = match count {
        1 => format!("{what} is not valid: {first}"),
        _ => format!("{what} is not valid: {count} issues, the first: {first}"),
    };
    InputError::new_err((message, issues))
}

fn options(strict: bool) -> ReadOptions {
    if strict {
        ReadOptions::strict()
    } else {
        ReadOptions::default()
    }
}

fn limits(time_limit_ms: Option<u64>) -> Limits {
    match time_limit_ms {
        Some(limit) => Limits::new().time_limit(Duration::from_millis(limit)),
        None => Limits::new(),
    }
}

fn load_problem(scenario: &str, strict: bool) -> PyResult<Problem> {
    Problem::from_json_with(scenario, &options(strict)).map_err(|error| input_error("the scenario", &error))
}

fn load_plan(plan: &str) -> PyResult<Plan> {
    Plan::from_json(plan).map_err(|error| input_error("the plan", &error))
}

fn to_json(value: Result<String, serde_json::Error>) -> PyResult<String> {
    value.map_err(|error| PyValueError::new_err(format!("cannot serialise the output: {error}")))
}

/// The plan for a scenario (plan JSON, docs/contract.md §4.1).
#[pyfunction]
#[pyo3(signature = (scenario, solver = "greedy", time_limit_ms = None, strict = false))]
fn plan(py: Python<'_>, scenario: &str, solver: &str, time_limit_ms: Option<u64>, strict: bool) -> PyResult<String> {
    let problem = load_problem(scenario, strict)?;
    let plan = match solver {
        "greedy" => py.detach(|| GreedyPlanner::new().limits(limits(time_limit_ms)).plan(&problem)),
        "exact" => {
            let limit = Some(time_limit_ms.unwrap_or(DEFAULT_EXACT_TIME_LIMIT_MS));
            py.detach(|| ExactPlanner::new().limits(limits(limit)).plan(&problem))
        }
        other => return Err(PyValueError::new_err(format!("solver must be 'greedy' or 'exact', not {other:?}"))),
    };
    to_json(serde_json::to_string(&plan))
}

/// The consolidation plan for a scenario with a fleet (docs/contract.md §4.2).
#[pyfunction]
#[pyo3(signature = (scenario, time_limit_ms = None, strict = false))]
fn consolidate(py: Python<'_>, scenario: &str, time_limit_ms: Option<u64>, strict: bool) -> PyResult<String> {
    let problem = load_problem(scenario, strict)?;
    let plan = py.detach(|| Consolidator::new().limits(limits(time_limit_ms)).plan(&problem));
    to_json(serde_json::to_string(&plan))
}

/// The rebalance plan for a scenario with a fleet (docs/contract.md §4.3).
#[pyfunction]
#[pyo3(signature = (scenario, time_limit_ms = None, strict = false))]
fn rebalance(py: Python<'_>, scenario: &str, time_limit_ms: Option<u64>, strict: bool) -> PyResult<String> {
    let problem = load_problem(scenario, strict)?;
    let mut rebalancer = Rebalancer::new();
    if time_limit_ms.is_some() {
        rebalancer = rebalancer.limits(limits(time_limit_ms));
    }
    let plan = py.detach(|| rebalancer.plan(&problem));
    to_json(serde_json::to_string(&plan))
}

/// Every violation of the scenario's rules by the plan (a JSON list; empty when it holds).
#[pyfunction]
#[pyo3(signature = (scenario, plan, strict = false))]
fn verify(scenario: &str, plan: &str, strict: bool) -> PyResult<String> {
    let problem = load_problem(scenario, strict)?;
    let plan = load_plan(plan)?;
    to_json(serde_json::to_string(&verify_plan(&problem, &plan)))
}

/// The reliability report of the scenario's fleet, or of the fleet after `plan` when given.
#[pyfunction]
#[pyo3(signature = (scenario, plan = None, strict = false))]
fn report(scenario: &str, plan: Option<&str>, strict: bool) -> PyResult<String> {
    let problem = load_problem(scenario, strict)?;
    let report = match plan {
        None => ReliabilityReport::build(&problem),
        Some(plan) => {
            // Actions that do not apply are left out, as on the command line; `verify` lists them.
            let (fleet, _) = FinalFleet::apply(&problem, &load_plan(plan)?.actions);
            ReliabilityReport::for_fleet(&problem, &fleet)
        }
    };
    to_json(serde_json::to_string(&report))
}

/// The simulation of a script (docs/simulate.md).
#[pyfunction]
#[pyo3(signature = (script, time_limit_ms = None, strict = false))]
fn simulate(py: Python<'_>, script: &str, time_limit_ms: Option<u64>, strict: bool) -> PyResult<String> {
    let (script, _) =
        Script::from_json_with(script, &options(strict)).map_err(|error| input_error("the script", &error))?;
    let simulation = py
        .detach(|| Simulator::new().limits(limits(time_limit_ms)).run(&script))
        .map_err(|error| input_error("the script", &error))?;
    Ok(simulation.to_json())
}

/// The pool sizing of a model description on a scenario's instance types (docs/sizing.md).
#[pyfunction]
#[pyo3(signature = (model, scenario, strict = false))]
fn size(model: &str, scenario: &str, strict: bool) -> PyResult<String> {
    let description =
        ModelDescription::from_json(model).map_err(|error| input_error("the model description", &error))?;
    let problem = load_problem(scenario, strict)?;
    let sizing = size_pool(&description, &problem).map_err(|error| input_error("the sizing", &error))?;
    Ok(sizing.to_json())
}

/// The module `fleetplan._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("InputError", module.py().get_type::<InputError>())?;
    module.add_function(wrap_pyfunction!(plan, module)?)?;
    module.add_function(wrap_pyfunction!(consolidate, module)?)?;
    module.add_function(wrap_pyfunction!(rebalance, module)?)?;
    module.add_function(wrap_pyfunction!(verify, module)?)?;
    module.add_function(wrap_pyfunction!(report, module)?)?;
    module.add_function(wrap_pyfunction!(simulate, module)?)?;
    module.add_function(wrap_pyfunction!(size, module)?)?;
    Ok(())
}
