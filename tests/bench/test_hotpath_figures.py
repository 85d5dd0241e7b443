"""The pure parts of issue 37's benchmark: the budget's attribution of py-spy samples to
stages, the rounds' medians and paired ratios, and the regression guard's verdicts."""

from __future__ import annotations

from typing import Any

from bench.budget import GLUE, attribute, figures
from bench.checks import hotpath_checks
from bench.hotpath import summary

SERVER = "run (trio/_core/_run.py:2532);_handle (hypercorn/trio/task_group.py:28)"


def test_each_sample_goes_to_the_innermost_frame_with_a_stage() -> None:
    lines = [
        # limits called from the chat service: the limits' (innermost stage)
        f"{SERVER};serve_chat (gateway/chat/service.py:80);admit "
        "(gateway/upstream/limits/limiter.py:270);now (trio/_core/_run.py:10) 3",
        # a trio frame inside our fast path is the fast path's
        f"{SERVER};FastPath._serve (gateway/platform/asgi.py:126);start_soon "
        "(trio/_core/_run.py:1385) 2",
        # the scheduler with nothing of ours above it
        "run (trio/_core/_run.py:2532);unrolled_run (trio/_core/_run.py:2866) 4",
        "",
        "garbage without a count",
    ]
    assert attribute(lines) == {
        "admission and limits": 3,
        "fast path, exchange, drain": 2,
        GLUE: 4,
    }


def test_a_stage_costs_its_share_of_the_cpu_per_request() -> None:
    found = figures(attribute([f"{SERVER} 3", "run (trio/_core/_run.py:1) 1"]), 2.0, 0.01)
    assert found["stages"]["server and h11 framing"] == {
        "share_pct": 75.0,
        "cpu_us_per_request": 1500.0,
    }
    assert found["gc_ms_per_request"] == 0.01


def _point(rps: float, p50: float, p99: float) -> dict[str, Any]:
    return {"rps": rps, "p50_ms": p50, "p99_ms": p99, "server_cpu_ms_per_request": 1.0}


def _round(gateway_rps: float, floor_rps: float, load: float) -> dict[str, Any]:
    return {
        "c32": {"gateway": _point(gateway_rps, 40, 60), "floor": _point(floor_rps, 30, 40)},
        "c1": {"gateway": _point(500, 1.5, 3.0), "floor": _point(800, 1.2, 2.0)},
        "sse": {
            "gateway": {"streams_per_s": 300.0, "server_cpu_ms_per_request": 3.0},
            "floor": {"streams_per_s": 600.0, "server_cpu_ms_per_request": 1.0},
        },
        "load_average": load,
    }


def test_rounds_give_medians_and_the_median_of_their_own_ratios() -> None:
    rounds = [_round(400, 1000, 1.0), _round(300, 500, 9.0), _round(450, 900, 2.0)]
    found = summary(rounds)
    assert found["c32"]["gateway"]["rps"] == 400
    assert found["c32"]["floor"]["rps"] == 900
    # paired per round (0.4, 0.6, 0.5), not 400 / 900: each round saw its own machine
    assert found["c32"]["ratio"] == 0.5
    assert found["c1"]["added_p50_ms"] == 0.3
    assert found["sse"]["ratio"] == 0.5
    assert found["load_average"] == 2.0


def test_the_guard_fails_a_figure_more_than_15_percent_below_its_target() -> None:
    relayed = summary([_round(600, 1000, 1.0)])  # 0.60x: 80 % of the 0.75x target
    speech = {"added_p50_ms": 0.8, "floor_p50_ms": 1.0, "gateway_p50_ms": 1.8}
    results = {
        "sections": {
            "hotpath": {"relayed": relayed, "speech": speech, "gateway_rss_peak_mib": 85.0}
        }
    }
    checks = {c.name.removeprefix("hot path: "): c for c in hotpath_checks(results)}
    throughput = checks["chat req/s at c=32, gateway / floor"]
    assert (throughput.value, throughput.passed, throughput.guard_failed) == (0.6, False, True)
    p50 = checks["c=1 p50, gateway - floor"]  # 1.5 ms against 1.2 + 0.5: within
    assert (p50.passed, p50.guard_failed) == (True, False)
    p99 = checks["c=1 p99, gateway - floor"]  # 3.0 against 2.0 + 2: within
    assert p99.passed
    assert checks["speech first byte at c=1, gateway - floor (p50)"].passed
    assert checks["gateway process RSS under load (every extra installed)"].passed
    sse = checks["SSE streams/s at c=32 (20 chunks), gateway / floor"]  # 0.5x: 67 %
    assert sse.guard_failed


def test_the_memory_check_is_on_the_gateways_own_process() -> None:
    """The usage writer's child is the tree's, not the core's: the check reads the
    gateway's process alone when the run measured it, and the tree only for older runs."""
    both = {"gateway_process_rss_peak_mib": 88.0, "gateway_rss_peak_mib": 106.0}
    rss = "gateway process RSS under load (every extra installed)"
    for hotpath, value in ((both, 88.0), ({"gateway_rss_peak_mib": 106.0}, 106.0)):
        checks = {
            c.name.removeprefix("hot path: "): c
            for c in hotpath_checks({"sections": {"hotpath": hotpath}})
        }
        assert (checks[rss].value, checks[rss].passed) == (value, value <= 90)


def test_the_memory_check_names_the_install_the_run_measured() -> None:
    """Issue 37's target is on the core install: a run whose gateway was composed as one
    says so, and an older run's figure (every extra installed) keeps its own name."""
    core = {"gateway_process_rss_peak_mib": 87.4, "gateway_module": "bench.core_serve"}
    (memory,) = [c for c in hotpath_checks({"sections": {"hotpath": core}}) if "RSS" in c.name]
    assert memory.name.endswith("(core install, c=32 rounds)")
    assert (memory.value, memory.passed, memory.score) == (87.4, True, 1.03)


def test_a_figure_not_measured_is_neither_passed_nor_guarded() -> None:
    checks = hotpath_checks({"sections": {}})
    assert all(c.passed is None and not c.guard_failed for c in checks)
