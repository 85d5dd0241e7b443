"""Where the tail comes from: one load point's requests laid out in time, beside the
gateway's own pauses.

`wrk` reports a latency histogram, which says how long the slow requests took but not
when they happened. The gateway's log says both: its access log has one line per request
(the time it ended and its latency) and, with `GATEWAY_TRACE_PAUSES`, the pause log
(`gateway.operator.pauses`) has one line per garbage collection or event-loop stall over
a millisecond. Reading the lines a load point appended gives:

- whether the slow requests (those at or over the point's p99) cluster in time, as
  requests held up together by one pause do, or spread, as contention does;
- the share of slow requests that were in flight while a pause happened;
- the pauses by kind: how many, their total and their longest;
- the gateway's own share of each request (its latency minus the time it waited for the
  upstream), whose percentiles are what the tail targets are about.

The latency measured here is the gateway's own (from the request's arrival in the app to
its last byte), so it leaves out the time a request waits in the socket before the app
reads it; `wrk`'s figures include that.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

CLUSTER_WINDOW_MS = 5.0  # slow requests ending this close together share a cause


@attrs.frozen
class Request:
    ended_s: float  # epoch seconds
    latency_ms: float
    upstream_ms: float  # of which waiting for the upstream

    @property
    def own_ms(self) -> float:
        """The gateway's own share: what it adds to the upstream's time."""
        return max(0.0, self.latency_ms - self.upstream_ms)


@attrs.frozen
class Pause:
    ended_s: float
    kind: str  # "gc" | "loop_lag" | "usage_batch" (a writer batch beside the loop)
    pause_ms: float


@attrs.frozen
class Timeline:
    requests: list[Request]
    pauses: list[Pause]


def log_size(path: Path) -> int:
    """Where the log ends now: a load point reads from here on."""
    return path.stat().st_size if path.exists() else 0


def read(path: Path, offset: int) -> Timeline:
    """The requests and pauses logged in `path` after `offset`."""
    requests: list[Request] = []
    pauses: list[Pause] = []
    with path.open("rb") as log:
        log.seek(offset)
        for raw in log:
            line = _parse(raw)
            if line is None:
                continue
            ended = datetime.fromisoformat(line["ts"]).timestamp()
            if line.get("logger") == "gateway.access" and "latency_ms" in line:
                upstream = float(line.get("upstream_ms") or 0.0)
                requests.append(Request(ended, float(line["latency_ms"]), upstream))
            elif line.get("logger") == "gateway.pauses":
                pauses.append(Pause(ended, str(line["kind"]), float(line["pause_ms"])))
    return Timeline(requests, pauses)


def _parse(raw: bytes) -> dict[str, Any] | None:
    if not raw.startswith(b"{"):
        return None
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    return line if isinstance(line, dict) and "ts" in line else None


def figures(timeline: Timeline) -> dict[str, Any]:
    """The summary a report shows, and the points a chart draws (offsets from the first
    request, in ms)."""
    requests = timeline.requests
    if not requests:
        return {"requests": 0}
    latencies = sorted(r.latency_ms for r in requests)
    own = sorted(r.own_ms for r in requests)
    p99 = _percentile(latencies, 99)
    slow = [r for r in requests if r.latency_ms >= p99]
    start = min(r.ended_s - r.latency_ms / 1000 for r in requests)
    batches = [p for p in timeline.pauses if p.kind == "usage_batch"]
    stops = [p for p in timeline.pauses if p.kind != "usage_batch"]
    return {
        "requests": len(requests),
        "gateway_p50_ms": _percentile(latencies, 50),
        "gateway_p99_ms": p99,
        "gateway_max_ms": latencies[-1],
        "own_p50_ms": _percentile(own, 50),
        "own_p99_ms": _percentile(own, 99),
        "own_p999_ms": _percentile(own, 99.9),
        "own_max_ms": own[-1],
        "slow_requests": len(slow),
        "slow_clustered_share": _clustered_share(slow),
        "slow_during_pause_share": _during_pause_share(slow, stops),
        # Slow requests that overlapped a usage-writer batch, and all requests that did:
        # a share much higher among the slow than among all is the batch's doing.
        "slow_during_batch_share": _during_pause_share(slow, batches),
        "all_during_batch_share": _during_pause_share(requests, batches),
        "pauses": _pause_summary(timeline.pauses),
        "points": [
            [round((r.ended_s - start) * 1000, 1), round(r.latency_ms, 2)] for r in requests
        ],
        "pause_points": [
            [round((p.ended_s - start) * 1000, 1), p.kind, round(p.pause_ms, 2)]
            for p in timeline.pauses
            if p.ended_s >= start
        ],
    }


def _percentile(ordered: list[float], p: float) -> float:
    """The nearest-rank percentile of an ordered list."""
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _clustered_share(slow: list[Request]) -> float:
    """Share of slow requests that ended within `CLUSTER_WINDOW_MS` of another one."""
    if len(slow) < 2:
        return 0.0
    ends = sorted(r.ended_s * 1000 for r in slow)
    clustered = sum(
        1
        for i, end in enumerate(ends)
        if (i > 0 and end - ends[i - 1] <= CLUSTER_WINDOW_MS)
        or (i + 1 < len(ends) and ends[i + 1] - end <= CLUSTER_WINDOW_MS)
    )
    return round(clustered / len(ends), 3)


def _during_pause_share(slow: list[Request], pauses: list[Pause]) -> float:
    """Share of the requests given in flight while one of the pauses given happened.

    Spans sorted by start with a running maximum of their ends: a request overlaps one
    when some span starting before it ended ends after it began (n log m, since it runs
    over every request of a point, not only the slow ones)."""
    if not slow:
        return 0.0
    spans = sorted((p.ended_s - p.pause_ms / 1000, p.ended_s) for p in pauses)
    starts = [start for start, _ in spans]
    latest_end = list(itertools.accumulate((end for _, end in spans), max))
    hit = 0
    for request in slow:
        begun = request.ended_s - request.latency_ms / 1000
        before = bisect.bisect_left(starts, request.ended_s)
        if before and latest_end[before - 1] > begun:
            hit += 1
    return round(hit / len(slow), 3)


def _pause_summary(pauses: list[Pause]) -> dict[str, dict[str, float]]:
    summary: dict[str, dict[str, float]] = {}
    for pause in pauses:
        kind = summary.setdefault(pause.kind, {"count": 0, "total_ms": 0.0, "max_ms": 0.0})
        kind["count"] += 1
        kind["total_ms"] = round(kind["total_ms"] + pause.pause_ms, 2)
        kind["max_ms"] = max(kind["max_ms"], pause.pause_ms)
    return summary
