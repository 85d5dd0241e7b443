"""Live health of each configured provider, from the outcomes of real requests.

A bounded window of recent outcomes per (workspace, provider): success rate, median
latency and the last error. Management endpoints read it; routing will use it to skip
providers that keep failing.
"""

from __future__ import annotations

import statistics
from collections import deque
from datetime import UTC, datetime

import attrs

WINDOW = 200
DEGRADED_BELOW = 0.9


@attrs.frozen
class Outcome:
    ok: bool
    latency_ms: float
    at: datetime
    error_type: str | None = None


@attrs.frozen
class HealthFigures:
    status: str  # "healthy" | "degraded" | "unknown"
    latency_ms: float | None
    success_rate: float | None
    last_check: datetime | None
    last_error_time: datetime | None
    last_error_type: str | None
    samples: int


@attrs.define
class HealthBook:
    _windows: dict[tuple[str, str], deque[Outcome]] = attrs.field(factory=dict)
    _last_error: dict[tuple[str, str], Outcome] = attrs.field(factory=dict)
    _first_result: dict[tuple[str, str], deque[float]] = attrs.field(factory=dict)
    _probes: dict[tuple[str, str], deque[Outcome]] = attrs.field(factory=dict)

    def record(
        self,
        workspace_id: str,
        provider_id: str,
        *,
        ok: bool,
        latency_ms: float,
        error_type: str | None = None,
    ) -> None:
        """A request's outcome (every upstream attempt that did not lose a race)."""
        outcome = Outcome(ok, latency_ms, datetime.now(UTC), error_type)
        self._add(self._windows, (workspace_id, provider_id), outcome)

    def record_probe(
        self,
        workspace_id: str,
        provider_id: str,
        *,
        ok: bool,
        latency_ms: float,
        error_type: str | None = None,
    ) -> None:
        """An active probe's outcome (`gateway.workers.health_probes`). Kept apart from
        request outcomes: a model list's latency says nothing about a completion's."""
        outcome = Outcome(ok, latency_ms, datetime.now(UTC), error_type)
        self._add(self._probes, (workspace_id, provider_id), outcome)

    def _add(
        self,
        windows: dict[tuple[str, str], deque[Outcome]],
        key: tuple[str, str],
        outcome: Outcome,
    ) -> None:
        windows.setdefault(key, deque(maxlen=WINDOW)).append(outcome)
        if not outcome.ok:
            self._last_error[key] = outcome

    def probes(self, workspace_id: str, provider_id: str) -> tuple[Outcome, ...]:
        """The recent probe outcomes of a provider, oldest first."""
        return tuple(self._probes.get((workspace_id, provider_id), ()))

    def record_first_result(self, workspace_id: str, provider_id: str, ms: float) -> None:
        """Time from sending to the first result (whole answer, or a stream's first
        content): what hedging compares against."""
        key = (workspace_id, provider_id)
        self._first_result.setdefault(key, deque(maxlen=WINDOW)).append(ms)

    def first_result_p95_ms(
        self, workspace_id: str, provider_id: str, min_samples: int
    ) -> float | None:
        samples = self._first_result.get((workspace_id, provider_id))
        if not samples or len(samples) < min_samples:
            return None
        ordered = sorted(samples)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]

    def forget(self, workspace_id: str, provider_id: str) -> None:
        self._windows.pop((workspace_id, provider_id), None)
        self._last_error.pop((workspace_id, provider_id), None)
        self._first_result.pop((workspace_id, provider_id), None)
        self._probes.pop((workspace_id, provider_id), None)

    def figures(self, workspace_id: str, provider_id: str) -> HealthFigures:
        """Figures from the provider's request outcomes; a provider that served no
        request yet is judged by its probes, with no latency (a probe's is not a
        request's, and routing reads this latency)."""
        key = (workspace_id, provider_id)
        window = self._windows.get(key) or deque()
        error = self._last_error.get(key)
        from_probes = not window
        if from_probes:
            window = self._probes.get(key) or deque()
        if not window:
            return HealthFigures("unknown", None, None, None, None, None, 0)
        rate = sum(o.ok for o in window) / len(window)
        latencies = [] if from_probes else [o.latency_ms for o in window if o.ok]
        return HealthFigures(
            status="healthy" if rate >= DEGRADED_BELOW else "degraded",
            latency_ms=round(statistics.median(latencies), 1) if latencies else None,
            success_rate=round(rate, 4),
            last_check=window[-1].at,
            last_error_time=error.at if error else None,
            last_error_type=error.error_type if error else None,
            samples=len(window),
        )
