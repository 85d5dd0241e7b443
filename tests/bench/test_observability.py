"""Section 9's figures from its rounds (pure), and its check against the 5 % budget."""

from __future__ import annotations

from bench.checks import evaluate
from bench.observability import cost


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
