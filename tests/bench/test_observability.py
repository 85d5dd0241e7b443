"""Section 9's figures from its rounds (pure), and its check against the 5 % budget."""

from __future__ import annotations

from bench.checks import evaluate
from bench.observability import by_process, cost
from bench.report_fleet import _observability_split


def _point(rps: float, rounds: list[float], cpu: float) -> dict[str, object]:
    return {
        "rps": rps,
        "server_cpu_ms_per_request": cpu,
        "rounds": [{"rps": r} for r in rounds],
    }


def test_the_cost_is_requests_lost_with_both_on() -> None:
    points = {
        "off": {"1": _point(500, [490, 510], 1.8), "32": _point(1000, [980, 1020], 1.0)},
        "on": {"1": _point(490, [485, 495], 1.85), "32": _point(960, [970, 950], 1.04)},
    }
    figures = cost(points)
    busy = figures["32"]
    assert busy["rps_ratio"] == 0.96
    assert busy["rps_ratio_by_round"] == [0.99, 0.931]
    assert busy["rps_ratio_median_round"] == 0.961
    assert busy["rps_lost_share"] == 0.04 and busy["within_budget"] is True
    assert figures["1"]["rps_lost_share"] == 0.02
    [check] = [
        c
        for c in evaluate({"sections": {"observability": {"cost": figures}}})
        if "request log" in c.name
    ]
    assert (check.value, check.passed) == (4.0, True)
    assert cost({"off": {}, "on": {}}) == {}


def test_the_cpu_is_split_by_process_and_reported() -> None:
    def spent(main: float, **workers: float) -> dict[str, object]:
        return {"cpu": {"cpu_ms_per_request": {"main": main, "wrk": 0.05, **workers}}}

    points = {
        "off": {"32": spent(1.2, **{"worker 11": 0.03})},
        "on": {"32": spent(1.22, **{"worker 21": 0.031, "worker 22": 0.02})},
    }
    roles = {
        "off": {"worker 11": "usage writer"},
        "on": {"worker 21": "usage writer", "worker 22": "span exporter"},
    }
    split = by_process(points, roles)
    assert split == {
        "32": {
            "off": {"gateway": 1.2, "usage writer": 0.03},
            "on": {"gateway": 1.22, "usage writer": 0.031, "span exporter": 0.02},
        }
    }
    [line] = _observability_split(split)
    assert line == (
        "- CPU-ms per request at c=32, off → on: gateway 1.200 → 1.220,"
        " usage writer 0.030 → 0.031, span exporter — → 0.020"
    )
