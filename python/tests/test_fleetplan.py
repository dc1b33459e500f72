"""The Python binding against the bundled scenarios (run: pytest python/tests)."""

import copy
import datetime
import decimal
import json
from pathlib import Path

import pytest

import fleetplan

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def load(name):
    return json.loads((SCENARIOS / name).read_text())


@pytest.fixture
def seed():
    return load("seed-az-balance.json")


@pytest.fixture
def fragmented():
    return load("fragmented-fleet.json")


def test_plan_places_every_copy_and_verifies(seed):
    result = fleetplan.plan(seed)
    assert result["Status"] in ("Optimal", "Feasible")
    assert result["Unplaced"] == []
    assert any(action["Type"] == "LaunchInstance" for action in result["Actions"])
    assert fleetplan.verify(seed, result) == []


def test_exact_plan_is_no_costlier_than_greedy(seed):
    greedy = fleetplan.plan(seed)
    exact = fleetplan.plan(seed, solver="exact", time_limit_ms=5000)
    assert fleetplan.verify(seed, exact) == []
    assert exact["Objective"]["Cost"] <= greedy["Objective"]["Cost"] + 1e-9


def test_json_text_gives_the_same_plan_as_a_dict(seed):
    assert fleetplan.plan(json.dumps(seed)) == fleetplan.plan(seed)


def test_boto3_response_keys_and_values_are_accepted_with_one_warning(seed):
    response = copy.deepcopy(seed)
    response["ResponseMetadata"] = {"RequestId": "r-1", "HTTPStatusCode": 200}
    response["Endpoint"]["CreationTime"] = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    response["Endpoint"]["ManagedInstanceScaling"]["MaxInstanceCount"] = decimal.Decimal(10)
    result = fleetplan.plan(response)
    unknown = [warning for warning in result["Warnings"] if warning["Kind"] == "UnknownKeys"]
    assert len(unknown) == 1
    assert "ResponseMetadata" in unknown[0]["Message"]
    assert "Endpoint.CreationTime" in unknown[0]["Message"]
    assert fleetplan.verify(seed, result) == []


def test_strict_mode_makes_unknown_keys_errors(seed):
    seed["ResponseMetadata"] = {}
    with pytest.raises(fleetplan.ValidationError) as raised:
        fleetplan.plan(seed, strict=True)
    assert raised.value.issues == [{"kind": "UnknownKey", "path": "ResponseMetadata", "message": "unknown key"}]


def test_validation_error_carries_every_issue_with_its_path(seed):
    seed["InferenceComponents"][0]["RuntimeConfig"]["CopyCount"] = -1
    seed["Endpoint"]["InstancePools"][0]["Priorty"] = 1
    with pytest.raises(fleetplan.ValidationError) as raised:
        fleetplan.plan(seed)
    issues = raised.value.issues
    assert [(issue["kind"], issue["path"]) for issue in issues] == [
        ("UnknownKey", "Endpoint.InstancePools[0].Priorty"),
        ("OutOfRange", "InferenceComponents[0].RuntimeConfig.CopyCount"),
    ]
    assert "did you mean Priority?" in issues[0]["message"]
    assert "InferenceComponents[0].RuntimeConfig.CopyCount" in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_malformed_json_text_is_a_validation_error():
    with pytest.raises(fleetplan.ValidationError) as raised:
        fleetplan.plan("{")
    assert raised.value.issues[0]["kind"] == "Malformed"
    assert raised.value.issues[0]["path"] == ""


def test_unknown_solver_is_a_value_error(seed):
    with pytest.raises(ValueError, match="greedy"):
        fleetplan.plan(seed, solver="fastest")


def test_verify_lists_the_violations_of_a_plan_for_another_scenario(seed, fragmented):
    violations = fleetplan.verify(fragmented, fleetplan.plan(seed))
    assert violations
    assert all({"Kind", "Message"} <= set(violation) for violation in violations)


def test_an_invalid_plan_is_a_validation_error(seed):
    with pytest.raises(fleetplan.ValidationError) as raised:
        fleetplan.verify(seed, {"Actions": "none"})
    assert any(issue["path"].startswith("Actions") or issue["path"] == "" for issue in raised.value.issues)


def test_consolidate_and_rebalance_return_steps(fragmented):
    consolidation = fleetplan.consolidate(fragmented)
    assert isinstance(consolidation["Steps"], list)
    rebalance = fleetplan.rebalance(fragmented, time_limit_ms=5000)
    assert isinstance(rebalance["Steps"], list)
    assert "ReachedObjective" in rebalance


def test_report_of_the_fleet_after_a_plan(seed):
    before = fleetplan.report(seed)
    after = fleetplan.report(seed, fleetplan.plan(seed))
    assert before["EndpointName"] == after["EndpointName"] == seed["Endpoint"]["EndpointName"]
    assert after["InstanceCount"] > before["InstanceCount"]


def test_simulate_a_bundled_script():
    result = fleetplan.simulate(load("simulations/az-outage.json"))
    assert result["Failures"] == []
    assert result["Ticks"]


def test_size_a_model_on_the_seed_types(seed):
    sizing = fleetplan.size(load("models/llama-70b.json"), seed)
    assert isinstance(sizing, dict) and sizing


def test_size_rejects_an_invalid_model_description(seed):
    with pytest.raises(fleetplan.ValidationError) as raised:
        fleetplan.size({"ModelName": 3}, seed)
    assert raised.value.issues
