"""The pause tracer: collections and loop stalls are measured, exported and (when asked)
logged; `settle_heap` freezes the start-up heap."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator

import httpx
import pytest
import trio

from bench import timeline
from gateway.app.server import RunningGateway
from gateway.operator.metrics import GatewayMetrics
from gateway.operator.pauses import PauseTracer, settle_heap
from tests.operator.prom import scrape, total


@pytest.fixture
def tracer() -> Iterator[tuple[PauseTracer, GatewayMetrics]]:
    metrics = GatewayMetrics()
    traced = PauseTracer(metrics, trace=True, threshold_ms=0.0)
    traced.install()
    yield traced, metrics
    traced.uninstall()


def test_each_collection_is_timed_by_generation(
    tracer: tuple[PauseTracer, GatewayMetrics], caplog: pytest.LogCaptureFixture
) -> None:
    _, metrics = tracer
    with caplog.at_level(logging.INFO, logger="gateway.pauses"):
        gc.collect()
    assert sum(metrics.gc_pause.counts[("2",)]) >= 1
    assert metrics.gc_pause.sums[("2",)] > 0
    logged = [r for r in caplog.records if r.name == "gateway.pauses"]
    assert any(r.fields["kind"] == "gc" and r.fields["generation"] == 2 for r in logged)  # type: ignore[attr-defined]


def test_uninstall_stops_the_timing() -> None:
    metrics = GatewayMetrics()
    traced = PauseTracer(metrics)
    traced.install()
    traced.uninstall()
    gc.collect()
    assert metrics.gc_pause.counts == {}


async def test_a_blocked_loop_is_seen_late(
    tracer: tuple[PauseTracer, GatewayMetrics], caplog: pytest.LogCaptureFixture
) -> None:
    traced, metrics = tracer
    with caplog.at_level(logging.INFO, logger="gateway.pauses"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(traced.watch_loop)
            await trio.sleep(0.02)
            time.sleep(0.05)  # noqa: ASYNC251 (the point: a synchronous stall of the loop)
            await trio.sleep(0.03)
            nursery.cancel_scope.cancel()
    stalls = [
        r.fields["pause_ms"]  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "gateway.pauses" and r.fields["kind"] == "loop_lag"  # type: ignore[attr-defined]
    ]
    assert max(stalls) >= 40
    assert metrics.loop_lag.sums[()] >= 0.04


def test_settle_heap_freezes_what_start_up_made() -> None:
    before = gc.get_threshold()
    try:
        frozen = settle_heap(12_345)
        # Frozen objects may be freed (by reference count) before the next line reads.
        assert frozen > 1000 and gc.get_freeze_count() > 1000
        assert gc.get_threshold()[0] == 12_345
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


async def test_collections_are_exported(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    gc.collect()
    found = await scrape(http)
    assert total(found, "gateway_gc_pause_seconds_count", generation="2") >= 1


def test_a_committed_usage_batch_is_logged_as_an_interval(
    tracer: tuple[PauseTracer, GatewayMetrics], caplog: pytest.LogCaptureFixture
) -> None:
    traced, _ = tracer
    with caplog.at_level(logging.INFO, logger="gateway.pauses"):
        traced.note_usage_batch(0.004, 37)
    [logged] = [r.fields for r in caplog.records if r.name == "gateway.pauses"]  # type: ignore[attr-defined]
    assert logged == {"kind": "usage_batch", "pause_ms": 4.0, "records": 37}


def test_an_untraced_usage_batch_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    quiet = PauseTracer(GatewayMetrics(), trace=False)
    with caplog.at_level(logging.INFO, logger="gateway.pauses"):
        quiet.note_usage_batch(0.004, 37)
    assert not [r for r in caplog.records if r.name == "gateway.pauses"]


def test_the_timeline_counts_requests_that_overlapped_a_batch() -> None:
    # Requests of 1 ms ending every 10 ms from t=1.0 s; one batch spans 1.0195-1.0225 s,
    # overlapping only the request in flight 1.019-1.020 s, and a gc pause at 1.05 s.
    requests = [timeline.Request(1.0 + i / 100, 1.0, 0.0) for i in range(10)]
    slow = [timeline.Request(1.0225, 3.0, 0.0)]  # 1.0195-1.0225: overlaps the batch
    pauses = [
        timeline.Pause(1.0225, "usage_batch", 3.0),
        timeline.Pause(1.05, "gc", 0.5),
    ]
    found = timeline.figures(timeline.Timeline(requests + slow, pauses))
    assert found["slow_during_batch_share"] == 1.0
    assert found["slow_during_pause_share"] == 0.0  # the gc pause touched no slow request
    assert found["all_during_batch_share"] == round(2 / 11, 3)  # 1.02's request and the slow one
