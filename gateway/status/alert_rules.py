"""Usage alerts: the six metrics over a window of usage, the comparison, and when an alert
changes state. Pure functions; the worker (`gateway.status.alert_evaluator`) does the I/O.

An alert notifies when its condition becomes true (`ok` -> `firing`, event
`alert.triggered`) and when it stops being true (`firing` -> `ok`, `alert.resolved`);
while the state does not change nothing is sent, so a condition that stays true for hours
sends one notification, not one per evaluation. A window without the data a metric needs
(no requests for `error_rate` or a latency) has no value, and a condition without a value
is false.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

from providers.catalog import round_cost
from store.usage import WindowFigures

METRICS = ("request_count", "error_rate", "latency_p50", "latency_p99", "token_usage", "cost")
OPERATORS: Mapping[str, Callable[[float, float], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
# (current state, condition true) -> (next state, event) where the state changes.
TRANSITIONS: Mapping[tuple[str, bool], tuple[str, str]] = {
    ("ok", True): ("firing", "alert.triggered"),
    ("firing", False): ("ok", "alert.resolved"),
}


def metric_value(metric: str, figures: WindowFigures) -> float | None:
    if metric == "request_count":
        return float(figures.requests)
    if metric == "error_rate":
        return figures.errors / figures.requests if figures.requests else None
    if metric == "latency_p50":
        return figures.latency_p50_ms
    if metric == "latency_p99":
        return figures.latency_p99_ms
    if metric == "token_usage":
        return float(figures.tokens)
    if metric == "cost":
        return round_cost(figures.cost_usd)
    raise ValueError(f"unknown metric {metric!r}")


def holds(op: str, value: float | None, threshold: float) -> bool:
    return value is not None and OPERATORS[op](value, threshold)


def transition(state: str, condition: bool) -> tuple[str, str] | None:
    """(next state, event) when the alert changes state, else None."""
    return TRANSITIONS.get((state, condition))
