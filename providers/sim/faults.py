"""Faults switched on at run time: the book that holds them and their JSON form.

Tests and benchmarks make an upstream misbehave for chosen models (`POST /_sim/faults`)
or for one request (header `x-sim-fault`). The book is owned by one `SimServer`; a
fault with `remaining` set wears out after that many requests.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from providers.sim.core import Fault

ANY_MODEL = "*"
_FIELDS = frozenset(field.name for field in attrs.fields(Fault))
_INT_FIELDS = ("status", "delay_ms", "stop_after_chunks", "stall_ms", "remaining")
_STR_FIELDS = ("model", "vendor", "code", "message")


class FaultError(ValueError):
    """A fault description that cannot be used (unknown field, wrong type)."""


class FaultBook:
    """The faults of one simulator; the first one matching a request applies.

    A fault matches when its model is the request's model (or `*`) and its vendor is the
    request's vendor (or None, for every vendor).
    """

    __slots__ = ("_faults",)

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        self._faults.append(fault)

    def clear(self) -> None:
        self._faults.clear()

    def active(self) -> list[Fault]:
        """The faults in force, in the order they are tried."""
        return list(self._faults)

    def take(self, model: str, vendor: str) -> Fault | None:
        """The fault applying to this request, using up one of its `remaining` uses."""
        if not self._faults:
            return None
        for position, fault in enumerate(self._faults):
            if _matches(fault, model, vendor):
                self._use(position, fault)
                return fault
        return None

    def _use(self, position: int, fault: Fault) -> None:
        if fault.remaining is None:
            return
        if fault.remaining <= 1:
            del self._faults[position]
        else:
            self._faults[position] = attrs.evolve(fault, remaining=fault.remaining - 1)


def _matches(fault: Fault, model: str, vendor: str) -> bool:
    return fault.model in (model, ANY_MODEL) and fault.vendor in (None, vendor)


def fault_from_json(payload: Any, default_model: str | None = None) -> Fault:
    """Build a `Fault` from its JSON object; `model` may be left to `default_model`."""
    if not isinstance(payload, dict):
        raise FaultError("a fault is a JSON object")
    unknown = set(payload) - _FIELDS
    if unknown:
        raise FaultError(f"unknown fault fields: {', '.join(sorted(unknown))}")
    fields = dict(payload)
    if "model" not in fields and default_model is not None:
        fields["model"] = default_model
    if not isinstance(fields.get("model"), str):
        raise FaultError("'model' (a string) is required")
    _check_types(fields)
    return Fault(**fields)


def _check_types(fields: dict[str, Any]) -> None:
    for name in _INT_FIELDS:
        value = fields.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise FaultError(f"'{name}' must be an integer")
    for name in _STR_FIELDS:
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            raise FaultError(f"'{name}' must be a string")


def fault_from_header(value: str) -> Fault:
    """The fault named by an `x-sim-fault` header: JSON whose `model` defaults to `*`."""
    try:
        payload = json.loads(value)
    except ValueError as exc:
        raise FaultError(f"x-sim-fault is not JSON: {exc}") from None
    return fault_from_json(payload, default_model=ANY_MODEL)


def fault_to_json(fault: Fault) -> dict[str, Any]:
    return attrs.asdict(fault)
