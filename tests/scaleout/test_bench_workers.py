"""Section 7 of the benchmark (one worker against two): its figures and its report."""

from __future__ import annotations

import os
import time
from typing import Any

from bench import checks, litellm_env, report_fleet
from bench.cpu_share import CpuShare
from bench.workers import bound_by_work, combined, scaling


def point(rps: float, p50_ms: float) -> dict[str, Any]:
    return {"rps": rps, "p50_ms": p50_ms, "server_cpu_ms_per_request": 1.0}


def round_point(requests: int, p50_ms: float, cpu_ms: float, steal: float) -> dict[str, Any]:
    """One round as `_round` records it: 2 s of `wrk`, CPU shares, Redis scripts."""
    return {
        "requests": requests,
        "duration_s": 2.0,
        "errors": 0,
        "rps": requests / 2.0,
        "p50_ms": p50_ms,
        "p99_ms": p50_ms * 3,
        "server_cpu_ms_per_request": cpu_ms,
        "cpu": {
            "cpu_ms_per_request": {"main": cpu_ms, "simulator": 0.3},
            "cpu_ms_per_request_total": cpu_ms + 0.3,
            "machine_idle_share": 0.1,
            "machine_steal_share": steal,
            "cores": 2,
        },
        "redis_scripts": requests,
        "redis_script_us": requests * 100,
    }


DIRECT = {"1": point(5000, 0.2)}
GATEWAY = {
    "1": {"1": point(900, 1.0), "32": point(1000, 30.0)},
    "2": {"1": point(880, 1.1), "32": point(1800, 17.0)},
}
LITELLM = {"1": {"32": point(100, 300.0)}, "2": {"32": point(150, 200.0)}}


def test_scaling_is_two_workers_over_one_and_the_ratio_to_litellm() -> None:
    figures = scaling(DIRECT, GATEWAY, LITELLM)
    assert figures == {
        "rps_ratio_two_over_one": 1.8,
        "rps_ratio_four_over_one": None,
        "rps_by_workers": {"1": 1000.0, "2": 1800.0, "4": None},
        "bound_by_work": {"2": None, "4": None},
        "rps_ratio_by_round": [],
        "added_p50_ms_c1": {"1": 0.8, "2": 0.9},
        "added_p50_change_ms": 0.1,
        "added_p50_change_by_round_ms": [],
        "ratio_to_litellm": {"1": 10.0, "2": 12.0},
    }


def test_rounds_combine_into_one_figure_and_a_ratio_per_round() -> None:
    one = combined([round_point(600, 4.0, 3.0, 0.0), round_point(400, 6.0, 4.0, 0.2)])
    assert one["rps"] == 250.0  # 1,000 requests in 4 s, not the mean of 300 and 200
    assert one["p50_ms"] == 5.0  # the median of the rounds' p50s
    assert one["server_cpu_ms_per_request"] == 3.4  # weighted by requests
    assert one["cpu"]["machine_steal_share"] == 0.1
    assert one["redis_scripts_per_request"] == 1.0
    assert [r["machine_steal_share"] for r in one["rounds"]] == [0.0, 0.2]
    two = combined([round_point(1100, 4.0, 3.0, 0.0), round_point(800, 6.0, 3.0, 0.1)])
    c1_one = combined([round_point(200, 4.0, 4.0, 0.0), round_point(100, 9.0, 6.0, 0.3)])
    c1_two = combined([round_point(190, 4.2, 4.0, 0.0), round_point(180, 4.3, 4.0, 0.0)])
    c1_two["rounds"].append(c1_two["rounds"][0] | {"p50_ms": 4.1})  # a third, unpaired
    gateway = {"1": {"1": c1_one, "32": one}, "2": {"1": c1_two, "32": two}}
    figures = scaling(DIRECT, gateway, {})
    assert figures["rps_ratio_two_over_one"] == 1.9
    assert figures["rps_ratio_by_round"] == [1.833, 2.0]
    # paired by round: +0.2 and -4.7 (the one worker's round hit by steal); the median
    assert figures["added_p50_change_by_round_ms"] == [0.2, -4.7]
    assert figures["added_p50_change_ms"] == -2.25


def test_the_bound_by_work_comes_from_one_workers_rounds() -> None:
    """Issue 37 point 4: N workers over one is at most min(N, cores x g / total), from
    one worker's rounds at c=32 as `combined` keeps them (it had dropped their CPU
    shares, so every bound read "not measured")."""
    one = combined([round_point(600, 4.0, 3.0, 0.0), round_point(400, 6.0, 1.7, 0.0)])
    gateway = {"1": {"32": one}}
    # rounds: 2 x 3.0 / 3.3 = 1.818 and 2 x 1.7 / 2.0 = 1.7; the median of the rounds
    assert bound_by_work(gateway, 2) == 1.76
    assert bound_by_work(gateway, 4) == 1.76  # the machine's two cores, not four workers
    assert scaling(DIRECT, gateway, {})["bound_by_work"] == {"2": 1.76, "4": 1.76}


def test_missing_points_are_not_measured_rather_than_passed() -> None:
    figures = scaling({}, {"1": GATEWAY["1"]}, {})
    assert figures["rps_ratio_two_over_one"] is None
    assert figures["added_p50_change_ms"] is None
    results = {"sections": {"workers": {"scaling": figures}}}
    verdicts = {c.name: c.passed for c in checks.evaluate(results) if "worker" in c.name}
    assert set(verdicts.values()) == {None}


def test_the_report_states_the_ratio_and_the_load() -> None:
    section = {
        "rounds": 3,
        "round_s": 2.0,
        "server_cores": [0, 1],
        "load_average_before": [8.27, 1, 1],
        "load_average_after": [9.53, 1, 1],
        "direct": DIRECT,
        "gateway": GATEWAY,
        "litellm": LITELLM,
        "scaling": scaling(DIRECT, GATEWAY, LITELLM),
    }
    results = {"sections": {"workers": section}}
    text = report_fleet.workers_text(results)
    assert "load average 8.27 before, 9.53 after" in text
    assert "1.80x the requests/s of one" in text
    assert "12.00x with two" in text
    assert "3 alternating rounds of 2 s" in text
    passed = {c.name: c.passed for c in checks.evaluate(results) if "worker" in c.name}
    assert passed == {
        "req/s, 2 workers / 1 worker, c=32": True,
        "added p50 at c=1, 2 workers minus 1 worker": True,
    }


def test_cpu_share_counts_each_process_per_request_and_the_idle_share() -> None:
    share = CpuShare({"main": os.getpid()})
    share.start()
    spent = time.process_time() + 0.05
    while time.process_time() < spent:  # 50 ms of this process's CPU
        pass
    figures = share.figures(requests=10)
    assert figures["cpu_ms_per_request"]["main"] >= 3.0  # >= 30 ms over 10 requests
    assert figures["cpu_ms_per_request_total"] >= figures["cpu_ms_per_request"]["main"]
    assert 0.0 <= figures["machine_idle_share"] <= 1.0
    assert 0.0 <= figures["machine_steal_share"] <= 1.0


def test_litellm_workers_count_as_started_by_their_log_lines() -> None:
    line = b"\x1b[32mLiteLLM: Proxy initialized with Config, Set models:\x1b[0m\n"
    log = line + b"INFO:     Waiting for child process [2]\n" + line
    assert litellm_env.started_workers(log) == 2
    assert litellm_env.started_workers(b"INFO:     Child process [1] died\n") == 0


def test_the_bound_is_what_one_workers_requests_cost_the_whole_machine() -> None:
    """One worker spends 1 CPU-ms a request, everything (upstream, Redis, wrk) 1.6: two
    cores serve at most 2 / 1.6 requests a millisecond, one worker 1: at most 1.25x,
    whatever the count of workers beyond two."""
    rounds = [
        round_point(1000, 30.0, 1.0, 0.0)
        | {
            "cpu": {
                "cpu_ms_per_request": {"main": 1.0},
                "cpu_ms_per_request_total": 1.6,
                "cores": 2,
            }
        }
    ]
    gateway = {"1": {"32": {"rps": 500.0, "rounds": rounds}}, "4": {"32": point(600, 50.0)}}
    assert bound_by_work(gateway, 2) == 1.25
    assert bound_by_work(gateway, 4) == 1.25
    assert scaling({}, gateway, {})["rps_ratio_four_over_one"] == 1.2
    assert bound_by_work({}, 2) is None
