"""Figures read when Prometheus scrapes: nothing to count per request.

Breaker states are summed per provider and state (not per model or workspace, which
would make the series grow with the configuration); the usage log's queue depth and write
latency come from the writer's own counters.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import attrs
import trio
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from gateway.operator.metrics import BoundedLabel
from gateway.platform.tracing import Tracing
from gateway.upstream.circuit import BreakerBook

BREAKER_STATES = ("closed", "open", "half_open")


class WriterFigures(Protocol):
    """The usage writer's own counters."""

    @property
    def queued(self) -> int: ...
    @property
    def written(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def batches_written(self) -> int: ...
    @property
    def write_seconds(self) -> float: ...


@attrs.frozen
class LiveSources:
    """What the scrape reads, plugged in by the composition root."""

    writer: WriterFigures
    breakers: BreakerBook
    pending_last_used: Callable[[], int]  # keys' last use waiting for the flusher
    cache_entries: Callable[[], int]  # answers in the response cache
    tracing: Tracing | None = None  # the spans' exporter (None: tracing off)


def live_figures(sources: LiveSources, providers: BoundedLabel) -> Iterator[Metric]:
    yield from _usage_log(sources)
    yield from _traces(sources.tracing)
    yield _breakers(sources.breakers, providers)
    entries = sources.cache_entries()
    yield _gauge("gateway_cache_entries", "Entries in the response cache", entries)
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


def _usage_log(sources: LiveSources) -> Iterator[Metric]:
    writer = sources.writer
    yield _gauge(
        "gateway_usage_log_queue_depth", "Usage records waiting for the writer", writer.queued
    )
    depth = GaugeMetricFamily(
        "gateway_worker_queue_depth",
        "Items waiting for each background worker",
        labels=["worker"],
    )
    depth.add_metric(["usage_writer"], writer.queued)
    depth.add_metric(["last_used"], sources.pending_last_used())
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


def _traces(tracing: Tracing | None) -> Iterator[Metric]:
    """The spans of tracing (when it is on): exported, refused by the endpoint, or dropped
    because the export queue was full."""
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


def _breakers(breakers: BreakerBook, providers: BoundedLabel) -> Metric:
    counts = Counter((providers(key[1]), breaker.state.value) for key, breaker in breakers.items())
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
