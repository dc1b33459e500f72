"""fleetplan from Python: where ML model replicas run on SageMaker-style instance pools.

Every function takes and returns plain dicts in the shapes of the fleetplan contract
(docs/contract.md in the repository): a scenario in, a plan, consolidation, rebalance, report,
simulation or sizing out. A document may also be given as JSON text.

boto3 responses can be passed as they are where they carry the contract's keys: datetimes become
ISO 8601 strings and ``Decimal`` numbers become JSON numbers on the way in; keys fleetplan does
not read (``ResponseMetadata``, ``EndpointConfigArn``, ``CreationTime``, ...) are accepted and
listed in one warning (``Warnings`` in a plan), except a key that looks like a misspelt known key,
which is an error. ``strict=True`` makes every unknown key an error.

Invalid input raises :class:`ValidationError`, which carries every issue found with its path.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _native

__all__ = [
    "ValidationError",
    "plan",
    "consolidate",
    "rebalance",
    "verify",
    "report",
    "simulate",
    "size",
]

#: A document: a dict (a boto3 response, a loaded scenario file) or its JSON text.
Document = Union[Mapping[str, Any], str]


class ValidationError(ValueError):
    """The input is not valid.

    ``issues`` lists every problem found, in input order, each a dict with ``kind`` (stable, e.g.
    ``"OutOfRange"``, ``"UnknownKey"``; docs/contract.md section 1.4), ``path`` (e.g.
    ``"InferenceComponents[0].RuntimeConfig.CopyCount"``; empty for the document as a whole) and
    ``message`` (for people).
    """

    def __init__(self, message: str, issues: List[Dict[str, str]]) -> None:
        super().__init__(message)
        self.issues = issues

    def __str__(self) -> str:
        lines = [self.args[0]]
        lines.extend(
            f"  {issue['path']}: {issue['message']}" if issue["path"] else f"  {issue['message']}"
            for issue in self.issues
        )
        return "\n".join(lines)


def _json_value(value: Any) -> Any:
    """The JSON form of the values boto3 puts in responses that ``json`` cannot write."""
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _text(document: Document) -> str:
    if isinstance(document, str):
        return document
    return json.dumps(document, default=_json_value, allow_nan=False)


def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return json.loads(function(*args, **kwargs))
    except _native.InputError as error:
        message, issues = error.args
        raise ValidationError(
            message, [{"kind": kind, "path": path, "message": text} for kind, path, text in issues]
        ) from None


def plan(
    scenario: Document,
    *,
    solver: str = "greedy",
    time_limit_ms: Optional[int] = None,
    strict: bool = False,
) -> Dict[str, Any]:
    """The plan for a scenario: ``solver`` is ``"greedy"`` or ``"exact"`` (10 s unless
    ``time_limit_ms`` says otherwise)."""
    return _call(_native.plan, _text(scenario), solver, time_limit_ms, strict)


def consolidate(
    scenario: Document, *, time_limit_ms: Optional[int] = None, strict: bool = False
) -> Dict[str, Any]:
    """The consolidation plan for a scenario with a running fleet."""
    return _call(_native.consolidate, _text(scenario), time_limit_ms, strict)


def rebalance(
    scenario: Document, *, time_limit_ms: Optional[int] = None, strict: bool = False
) -> Dict[str, Any]:
    """The make-before-break way back to preferred instance types for a running fleet."""
    return _call(_native.rebalance, _text(scenario), time_limit_ms, strict)


def verify(scenario: Document, plan: Document, *, strict: bool = False) -> List[Dict[str, Any]]:
    """Every rule of the scenario the plan breaks; an empty list when it holds."""
    return _call(_native.verify, _text(scenario), _text(plan), strict)


def report(
    scenario: Document, plan: Optional[Document] = None, *, strict: bool = False
) -> Dict[str, Any]:
    """The reliability report (AZ balance, fallback instances, headroom) of the scenario's fleet,
    or of the fleet after ``plan``."""
    return _call(_native.report, _text(scenario), None if plan is None else _text(plan), strict)


def simulate(
    script: Document, *, time_limit_ms: Optional[int] = None, strict: bool = False
) -> Dict[str, Any]:
    """The run of a simulation script (docs/simulate.md)."""
    return _call(_native.simulate, _text(script), time_limit_ms, strict)


def size(model: Document, scenario: Document, *, strict: bool = False) -> Dict[str, Any]:
    """How many accelerators, copies and instances a model description needs on the scenario's
    instance types (docs/sizing.md)."""
    return _call(_native.size, _text(model), _text(scenario), strict)
