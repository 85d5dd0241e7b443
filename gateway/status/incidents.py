"""When provider health opens, escalates or resolves an incident: pure rules, as tables.

The incident monitor reads each active provider's recent probe outcomes
(`HealthBook.probes`) and classifies them into a `Signal`; `TRANSITIONS` then says what to
do with the provider's open monitor incident (if any). Thresholds are settings:

- down: the last `down_after` probes all failed -> severity `major`;
- degraded: at least `degraded_after` failures among the last `window` probes -> `minor`;
- healthy: the last `recover_after` probes all succeeded -> the incident is resolved;
- otherwise (too few probes, or mixed results short of a threshold): no change.

A minor incident whose provider goes down is escalated to major; a major one stays major
until the provider recovers (flapping between degraded and down does not spam updates).
`critical` is left to operators, who know when a whole service is lost.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

import attrs

SEVERITIES = ("critical", "major", "minor", "maintenance")
INCIDENT_STATUSES = ("investigating", "identified", "monitoring", "resolved")
MAINTENANCE_STATUSES = ("scheduled", "in_progress", "completed")


class Signal(enum.Enum):
    DOWN = "down"
    DEGRADED = "degraded"
    HEALTHY = "healthy"
    HOLD = "hold"


class Action(enum.Enum):
    NOTHING = "nothing"
    OPEN_MAJOR = "open_major"
    OPEN_MINOR = "open_minor"
    ESCALATE = "escalate"
    RESOLVE = "resolve"


@attrs.frozen
class Thresholds:
    down_after: int = 3
    degraded_after: int = 2
    window: int = 5
    recover_after: int = 2


# (severity of the provider's open monitor incident or None, signal) -> action.
TRANSITIONS: Mapping[tuple[str | None, Signal], Action] = {
    (None, Signal.DOWN): Action.OPEN_MAJOR,
    (None, Signal.DEGRADED): Action.OPEN_MINOR,
    ("minor", Signal.DOWN): Action.ESCALATE,
    ("minor", Signal.HEALTHY): Action.RESOLVE,
    ("major", Signal.HEALTHY): Action.RESOLVE,
    ("critical", Signal.HEALTHY): Action.RESOLVE,
}


def classify(ok_flags: Sequence[bool], thresholds: Thresholds) -> Signal:
    """The signal of a provider's probe outcomes, oldest first (True = success)."""
    last = list(ok_flags)
    if len(last) >= thresholds.down_after and not any(last[-thresholds.down_after :]):
        return Signal.DOWN
    if len(last) >= thresholds.recover_after and all(last[-thresholds.recover_after :]):
        return Signal.HEALTHY
    failures = sum(not ok for ok in last[-thresholds.window :])
    if failures >= thresholds.degraded_after:
        return Signal.DEGRADED
    return Signal.HOLD


def decide(open_severity: str | None, signal: Signal) -> Action:
    return TRANSITIONS.get((open_severity, signal), Action.NOTHING)


def event_name(severity: str, change: str, status: str, previous: str | None = None) -> str:
    """The webhook event for a change (`created`, `updated`, `resolved`) of an incident
    whose status was `previous`; maintenance incidents use the maintenance events, and a
    window starts once: when it becomes `in_progress` (opened so, or moved to it), not
    again at each later update while it runs."""
    if severity != "maintenance":
        return f"incident.{change}"
    if change == "resolved":
        return "maintenance.completed"
    if status == "in_progress" and previous != "in_progress":
        return "maintenance.started"
    return "maintenance.scheduled" if change == "created" else "incident.updated"
