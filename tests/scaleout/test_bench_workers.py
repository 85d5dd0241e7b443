"""Section 7 of the benchmark (one worker against two): its figures and its report."""

from __future__ import annotations

import os
import time
from typing import Any

from bench import checks, litellm_env, report
from bench.cpu_share import CpuShare
from bench.workers import scaling


def point(rps: float, p50_ms: float) -> dict[str, Any]:
    return {"rps": rps, "p50_ms": p50_ms, "server_cpu_ms_per_request": 1.0}


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
        "added_p50_ms_c1": {"1": 0.8, "2": 0.9},
        "added_p50_change_ms": 0.1,
        "ratio_to_litellm": {"1": 10.0, "2": 12.0},
    }


def test_missing_points_are_not_measured_rather_than_passed() -> None:
    figures = scaling({}, {"1": GATEWAY["1"]}, {})
    assert figures["rps_ratio_two_over_one"] is None
    assert figures["added_p50_change_ms"] is None
    results = {"sections": {"workers": {"scaling": figures}}}
    verdicts = {c.name: c.passed for c in checks.evaluate(results) if "worker" in c.name}
    assert set(verdicts.values()) == {None}


def test_the_report_states_the_ratio_and_the_load() -> None:
    section = {
        "duration_s": 3.0,
        "server_cores": [0, 1],
        "load_average_before": [8.27, 1, 1],
        "load_average_after": [9.53, 1, 1],
        "direct": DIRECT,
        "gateway": GATEWAY,
        "litellm": LITELLM,
        "scaling": scaling(DIRECT, GATEWAY, LITELLM),
    }
    results = {"sections": {"workers": section}}
    text = report._workers_text(results)
    assert "load average 8.27 before, 9.53 after" in text
    assert "1.80x the requests/s of one" in text
    assert "12.00x with two" in text
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


def test_litellm_workers_count_as_started_by_their_log_lines() -> None:
    line = b"\x1b[32mLiteLLM: Proxy initialized with Config, Set models:\x1b[0m\n"
    log = line + b"INFO:     Waiting for child process [2]\n" + line
    assert litellm_env.started_workers(log) == 2
    assert litellm_env.started_workers(b"INFO:     Child process [1] died\n") == 0
