"""Faults switched on at run time: the book that holds them and their JSON form.

Tests and benchmarks make an upstream misbehave for chosen models (`POST /_sim/faults`)
or for one request (header `x-sim-fault`). The book is owned by one `SimServer`; a
fault with `remaining` set wears out after that many requests.

A fault with `probability` below 1 applies to each matching request with that chance.
The choice is a seeded draw, not the clock or the process's hash seed: each fault added
to the book gets its own generator, seeded by the book's seed and the fault's position
in the order of additions since the book was last cleared. The n-th matching request a
fault sees is therefore faulted or spared the same way in every run, and clearing the
book then adding the same faults replays the same choices (a benchmark can repeat a
phase under identical faults). Only the order in which requests reach the simulator can
vary between runs.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from typing import Any

import attrs
import trio

from providers.sim.core import Fault

ANY_MODEL = "*"
# The model a fault names to fail a vendor's model list, which is what the gateway's health
# probes call; a fault for every model (`*`) fails it too. Every simulated vendor obeys it.
MODEL_LIST = "_model_list"
_FIELDS = frozenset(field.name for field in attrs.fields(Fault))
_INT_FIELDS = ("status", "delay_ms", "stop_after_chunks", "stall_ms", "remaining")
_STR_FIELDS = ("model", "vendor", "code", "message")
_BOOL_FIELDS = ("reset", "malformed")


class FaultError(ValueError):
    """A fault description that cannot be used (unknown field, wrong type)."""


class FaultBook:
    """The faults of one simulator; the first one matching a request that fires applies.

    A fault matches when its model is the request's model (or `*`) and its vendor is the
    request's vendor (or None, for every vendor). It fires always when its `probability`
    is 1, else when its own seeded draw says so; a matching fault that does not fire lets
    the next one have its chance, so faults can be layered (1 % errors, 5 % stalls).
    """

    __slots__ = ("_added", "_draws", "_faults", "_one_request_draws", "_seed")

    def __init__(self, seed: int = 0) -> None:
        self._seed = seed
        self._faults: list[Fault] = []
        self._draws: list[random.Random] = []  # one generator per fault, same order
        self._added = 0
        self._one_request_draws = random.Random(f"{seed}:x-sim-fault")

    def add(self, fault: Fault) -> None:
        self._faults.append(fault)
        self._draws.append(random.Random(f"{self._seed}:{self._added}"))
        self._added += 1

    def clear(self) -> None:
        self._faults.clear()
        self._draws.clear()
        self._added = 0

    def active(self) -> list[Fault]:
        """The faults in force, in the order they are tried."""
        return list(self._faults)

    def take(self, model: str, vendor: str) -> Fault | None:
        """The fault applying to this request, using up one of its `remaining` uses."""
        if not self._faults:
            return None
        for position, fault in enumerate(self._faults):
            if _matches(fault, model, vendor) and _fires(fault, self._draws[position]):
                self._use(position, fault)
                return fault
        return None

    def fires_once(self, fault: Fault) -> bool:
        """Whether a one-request fault (`x-sim-fault`) applies, by its `probability`;
        these draws come from one generator of their own, seeded like the book's."""
        return _fires(fault, self._one_request_draws)

    def _use(self, position: int, fault: Fault) -> None:
        if fault.remaining is None:
            return
        if fault.remaining <= 1:
            del self._faults[position]
            del self._draws[position]
        else:
            self._faults[position] = attrs.evolve(fault, remaining=fault.remaining - 1)


def _fires(fault: Fault, draws: random.Random) -> bool:
    # A certain fault draws nothing, so adding probabilities changed no existing run.
    if fault.probability >= 1.0:
        return True
    return draws.random() < fault.probability


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
    if "probability" in fields:
        fields["probability"] = _probability(fields["probability"])
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
    for name in _BOOL_FIELDS:
        if name in fields and not isinstance(fields[name], bool):
            raise FaultError(f"'{name}' must be true or false")


def _probability(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FaultError("'probability' must be a number from 0 to 1")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise FaultError("'probability' must be a number from 0 to 1")
    return float(value)


def fault_from_header(value: str) -> Fault:
    """The fault named by an `x-sim-fault` header: JSON whose `model` defaults to `*`."""
    try:
        payload = json.loads(value)
    except ValueError as exc:
        raise FaultError(f"x-sim-fault is not JSON: {exc}") from None
    return fault_from_json(payload, default_model=ANY_MODEL)


def fault_to_json(fault: Fault) -> dict[str, Any]:
    return attrs.asdict(fault)


async def apply_fault(fault: Fault | None, refuse: Callable[[Fault, int], Exception]) -> None:
    """Wait out a fault's delay, then raise the vendor's refusal (`refuse(fault, status)`)
    when the fault names an error status. Every vendor module answers faults this way."""
    if fault is None:
        return
    if fault.delay_ms:
        await trio.sleep(fault.delay_ms / 1000)
    if fault.status is not None and fault.status >= 400:
        raise refuse(fault, fault.status)
