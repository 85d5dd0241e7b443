"""What stops the event loop: garbage-collection pauses and loop stalls, measured.

A request's tail latency is set less by what the request costs than by what stops the one
event loop while it waits: a garbage collection (the collector runs on the thread that
allocates, in the middle of whichever request allocated last), a synchronous write, a
long stretch of Python between two checkpoints. This module times both kinds from the
inside, so an operator (and the benchmark's latency timeline) can see them:

- every collection, through `gc.callbacks`, by generation: the
  `gateway_gc_pause_seconds` histogram;
- with the `trace_pauses` setting, the loop's lateness, from a task that asks to wake
  every `LAG_INTERVAL_S` and measures how late it woke: the `gateway_loop_lag_seconds`
  histogram (off by default: a task waking a hundred times a second is a cost, and a
  test's virtual clock would make its readings meaningless).

With `trace_pauses`, each pause or stall over `trace_threshold_ms` is also written to the
`gateway.pauses` log (time, kind, duration, generation), which is what `bench/timeline.py`
lays over the latency of the requests around it.

`settle_heap` is the remedy for the worst of them: everything alive once the gateway
has started (modules, the catalog, compiled patterns: about 100,000 objects) is moved
out of the collector's sight with `gc.freeze()`, so a full collection scans only what
requests made since, and the young-generation threshold is raised so that collections
come less often (each one still scans only the young objects).
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

import trio

from gateway.operator.metrics import GatewayMetrics

logger = logging.getLogger("gateway.pauses")

LAG_INTERVAL_S = 0.01


def settle_heap(gen0_threshold: int) -> int:
    """Collect once, freeze what survives and set the young-generation threshold.

    Returns how many objects were frozen. Called once the gateway serves: the objects
    made while starting live as long as the process, so scanning them again in every
    full collection is pure pause.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0_threshold, gen1, gen2)
    return gc.get_freeze_count()


class PauseTracer:
    """Times collections (a `gc.callbacks` entry) and the loop's lateness (`watch_loop`).

    `install` and `uninstall` pair up; the callback costs two clock reads per collection.
    """

    def __init__(
        self, metrics: GatewayMetrics, *, trace: bool = False, threshold_ms: float = 1.0
    ) -> None:
        self._metrics = metrics
        self._trace = trace
        self._threshold_s = threshold_ms / 1000
        self._started = 0.0

    def install(self) -> None:
        gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        seconds = time.perf_counter() - self._started
        generation = info["generation"]
        self._metrics.gc_pause.observe((_GENERATIONS[generation],), seconds)
        if self._trace and seconds >= self._threshold_s:
            self._log("gc", seconds, generation=generation, collected=info["collected"])

    async def watch_loop(self) -> None:
        """Wake every `LAG_INTERVAL_S` and record how late each wake-up came."""
        while True:
            asked = trio.current_time() + LAG_INTERVAL_S
            await trio.sleep_until(asked)
            late = max(0.0, trio.current_time() - asked)
            self._metrics.loop_lag.observe((), late)
            if self._trace and late >= self._threshold_s:
                self._log("loop_lag", late)

    def note_usage_batch(self, seconds: float, records: int) -> None:
        """A usage-writer batch just committed (`UsageWriter.on_batch`): logged as an
        interval, not a pause. The batch runs in a thread, but its Python work holds the
        GIL the loop needs, so requests in flight beside it can stall; the timeline counts
        the slow requests that overlapped one."""
        if self._trace:
            self._log("usage_batch", seconds, records=records)

    def _log(self, kind: str, seconds: float, **fields: Any) -> None:
        record = {"kind": kind, "pause_ms": round(seconds * 1000, 3), **fields}
        logger.info("pause", extra={"fields": record})


_GENERATIONS = ("0", "1", "2")
