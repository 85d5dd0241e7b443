"""Figures read from the app state when Prometheus scrapes: nothing to count per request.

Breaker states are summed per provider and state (not per model or workspace, which
would make the series grow with the configuration); the usage log's queue depth and write
latency come from the writer's own counters.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from gateway.operator.metrics import BoundedLabel

if TYPE_CHECKING:
    from gateway.platform.state import AppState

BREAKER_STATES = ("closed", "open", "half_open")


def live_figures(state: AppState, providers: BoundedLabel) -> Iterator[Metric]:
    yield from _usage_log(state)
    yield from _traces(state)
    yield _breakers(state, providers)
    yield _gauge("gateway_cache_entries", "Entries in the response cache", len(state.cache))
    yield from _process()


def _process() -> Iterator[Metric]:
    """What leaks would show first: live trio tasks and open file descriptors (a soak
    compares them before and after; see bench/faults.py)."""
    yield _gauge("gateway_trio_tasks", "Live trio tasks in the gateway process", _trio_tasks())
    fds = Path("/proc/self/fd")
    if fds.is_dir():
        yield _gauge("gateway_open_fds", "Open file descriptors", len(os.listdir(fds)))


def _trio_tasks() -> int:
    """Every live task, found from the root task through the nurseries it holds open."""
    try:
        pending = [trio.lowlevel.current_root_task()]
    except RuntimeError:  # not inside trio (a scrape cannot happen there, but be safe)
        return 0
    count = 0
    while pending:
        task = pending.pop()
        if task is None:
            continue
        count += 1
        pending.extend(child for nursery in task.child_nurseries for child in nursery.child_tasks)
    return count


def _usage_log(state: AppState) -> Iterator[Metric]:
    writer = state.usage
    yield _gauge(
        "gateway_usage_log_queue_depth", "Usage records waiting for the writer", writer.queued
    )
    depth = GaugeMetricFamily(
        "gateway_worker_queue_depth",
        "Items waiting for each background worker",
        labels=["worker"],
    )
    depth.add_metric(["usage_writer"], writer.queued)
    depth.add_metric(["last_used"], state.keyring.pending_last_used)
    yield depth
    written = CounterMetricFamily(
        "gateway_usage_log_records", "Usage records by fate", labels=["fate"]
    )
    written.add_metric(["written"], writer.written)
    written.add_metric(["dropped"], writer.dropped)
    written.add_metric(["failed"], writer.failed)
    yield written
    yield SummaryMetricFamily(
        "gateway_usage_log_write_seconds",
        "Committed usage-log batch writes: how many and their total time",
        count_value=writer.batches_written,
        sum_value=writer.write_seconds,
    )


def _traces(state: AppState) -> Iterator[Metric]:
    """The spans of tracing (when it is on): exported, refused by the endpoint, or dropped
    because the export queue was full."""
    tracing = state.tracing
    if tracing is None:
        return
    spans = CounterMetricFamily(
        "gateway_trace_spans", "Finished spans by fate (tracing on)", labels=["fate"]
    )
    spans.add_metric(["exported"], tracing.exported)
    spans.add_metric(["failed"], tracing.failed)
    spans.add_metric(["dropped"], tracing.queue.dropped)
    yield spans
    yield _gauge("gateway_trace_queue_depth", "Spans waiting for the exporter", len(tracing.queue))


def _breakers(state: AppState, providers: BoundedLabel) -> Metric:
    counts = Counter(
        (providers(key[1]), breaker.state.value) for key, breaker in state.breakers.items()
    )
    family = GaugeMetricFamily(
        "gateway_circuit_breakers",
        "Circuit breakers (provider and model) in each state",
        labels=["provider", "state"],
    )
    seen = {provider for provider, _ in counts}
    for provider in sorted(seen):
        for name in BREAKER_STATES:
            family.add_metric([provider, name], counts.get((provider, name), 0))
    return family


def _gauge(name: str, doc: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family
