"""`python -m bench.resilience [--quick] [--json]`: what failures cost a client.

Three measurements against the simulator, each through the gateway's HTTP API only:

1. Failover: the latency of a request whose primary (OpenAI `gpt-4o-mini`) fails, with
   a 500 or by staying silent past the gateway's upstream timeout, so that the fallback
   (Mistral `mistral-small-latest`) answers; next to healthy requests interleaved with
   them, so both see the same machine. The circuit breaker opens after five consecutive
   failures of a provider, which would turn the failover into a skip: each failing
   request gets a one-use fault (`remaining: 1`) and is followed by a healthy one, which
   closes the count again. A last run leaves the fault on to show the breaker opening.
2. Hedging: p50/p99 at concurrency 16 when 5 % of all upstream calls (primary and
   fallback alike) stall for 2 s (`probability: 0.05`), with hedging off
   (`hedge_after_ms` too large to fire), at 100 ms, and automatic (no setting, a full
   window of healthy samples first).
3. Features: throughput and the gateway's CPU per request with rate limits, routing
   rules and the usage log on, versus the closest configuration to "off" that can be
   made from outside (the gateway has no switches), plus a py-spy profile share.

The rig (sizes, processes, the timing client) is `bench.resilience_rig`; processes come
from `bench.procs` and non-streamed load from `bench.load` (`wrk`);
the latency runs use a trio/httpx client because they arm a fault between requests
and need each request's answer (who served it). Figures go to stdout (a table, and the
JSON with `--json`) and to `bench/results/resilience-<date>[-quick].json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from bench import load, machine
from bench.resilience_rig import (
    CHAT_PATH,
    FALLBACK,
    PRIMARY,
    Answer,
    Bench,
    Gateway,
    Sizes,
    admin,
    ask,
    chat_body,
    new_client,
    running_gateway,
    set_hedge,
    start_sim,
    summary,
)

RESULTS = Path(__file__).resolve().parent / "results"
TIMEOUT_GATEWAY_S = 1.0  # GATEWAY_UPSTREAM_TIMEOUT_S of the gateway used for timeouts
SILENT_MS = 3_000  # a primary that stays silent this long outlives that timeout
STALL_MS, STALL_SHARE = 2_000, 0.05
HEDGE_FIXED_MS, HEDGE_NEVER_MS = 100, 10_000_000
HEALTH_WINDOW = 200  # gateway.upstream.health.WINDOW: samples that decide automatic hedging
ROUTING_RULES = 10
PROFILE_PARTS = {
    "rate limits": ("gateway/limits/",),
    "routing": ("gateway/routing/", "gateway/resolve.py"),
    "usage log": ("store/usage", "gateway/upstream/usage.py"),
}


# -- 1. failover ---------------------------------------------------------------------------


async def interleaved(
    bench: Bench, gateway: Gateway, fault: dict[str, Any], pairs: int, stream: bool
) -> tuple[list[Answer], list[Answer]]:
    """`pairs` times: arm a one-use fault on the primary, send a request (it fails
    over), then send a healthy one (which also resets the breaker's failure count)."""
    failing: list[Answer] = []
    healthy: list[Answer] = []
    async with new_client(1) as client:
        for model in (PRIMARY, FALLBACK, PRIMARY):  # warm both paths' connections
            await ask(client, gateway, model)
        for _ in range(pairs):
            await trio.to_thread.run_sync(
                bench.sim_call, "POST", "faults", fault | {"remaining": 1}
            )
            failing.append(await ask(client, gateway, stream=stream))
            healthy.append(await ask(client, gateway, stream=stream))
    bench.sim_call("DELETE", "faults")
    return failing, healthy


async def healthy_only(gateway: Gateway, count: int, stream: bool) -> list[Answer]:
    async with new_client(1) as client:
        return [await ask(client, gateway, stream=stream) for _ in range(count)]


def failover_case(
    bench: Bench, gateway: Gateway, fault: dict[str, Any], pairs: int, *, stream: bool = False
) -> dict[str, Any]:
    """Latency of failing-over requests against interleaved healthy ones (for streams,
    the time to the first content chunk), and the gateway's CPU per failover (the pairs'
    CPU minus that of as many healthy requests)."""
    cpu0 = gateway.proc.cpu_s()
    failing, healthy = trio.run(interleaved, bench, gateway, fault, pairs, stream)
    cpu_pairs = gateway.proc.cpu_s() - cpu0
    cpu1 = gateway.proc.cpu_s()
    trio.run(healthy_only, gateway, pairs, stream)
    cpu_healthy = gateway.proc.cpu_s() - cpu1
    f, h = summary(failing), summary(healthy)
    return {
        "fault": fault | {"remaining": 1},
        "stream": stream,
        "failing_over": f,
        "healthy": h,
        "added_p50_ms": round(f["p50_ms"] - h["p50_ms"], 2),
        "added_p99_ms": round(f["p99_ms"] - h["p99_ms"], 2),
        "gateway_cpu_ms_healthy": round(cpu_healthy * 1000 / pairs, 3),
        "gateway_cpu_ms_failover": round((cpu_pairs - cpu_healthy) * 1000 / pairs, 3),
    }


async def breaker_run(bench: Bench, gateway: Gateway, count: int) -> list[Answer]:
    """The fault stays on: the first requests fail over, then the circuit opens."""
    fault = {"model": PRIMARY, "vendor": "openai", "status": 500}
    await trio.to_thread.run_sync(bench.sim_call, "POST", "faults", fault)
    try:
        async with new_client(1) as client:
            return [await ask(client, gateway) for _ in range(count)]
    finally:
        await trio.to_thread.run_sync(bench.sim_call, "DELETE", "faults")


def breaker_case(bench: Bench, gateway: Gateway, count: int) -> dict[str, Any]:
    before = bench.upstream_calls()
    answers = trio.run(breaker_run, bench, gateway, count)
    after = bench.upstream_calls()
    tripped = after["openai"] - before["openai"]
    return {
        "fault": {"model": PRIMARY, "vendor": "openai", "status": 500},
        "requests": count,
        "primary_calls": tripped,
        "first_requests_ms": [round(a.seconds * 1000, 2) for a in answers[:8]],
        "after_open": summary(answers[tripped:]),
    }


def failover(bench: Bench) -> dict[str, Any]:
    sizes = bench.sizes
    error = {"model": PRIMARY, "vendor": "openai", "status": 500}
    silent = {"model": PRIMARY, "vendor": "openai", "delay_ms": SILENT_MS}
    results: dict[str, Any] = {}
    with running_gateway(bench, "gateway-default", {}) as gateway:
        bench.say(f"failover: primary answers 500, {sizes.failover_500} pairs")
        results["status_500"] = failover_case(bench, gateway, error, sizes.failover_500)
        bench.say(f"failover: primary answers 500, streamed, {sizes.failover_500} pairs")
        results["status_500_stream"] = failover_case(
            bench, gateway, error, sizes.failover_500, stream=True
        )
        bench.say(f"failover: fault left on for {sizes.breaker_run} requests (breaker)")
        results["status_500_breaker"] = breaker_case(bench, gateway, sizes.breaker_run)
    timeout_env = {
        "GATEWAY_UPSTREAM_TIMEOUT_S": str(TIMEOUT_GATEWAY_S),
        "GATEWAY_FIRST_CHUNK_TIMEOUT_S": str(TIMEOUT_GATEWAY_S),  # the streams' deadline
        "GATEWAY_HEDGE_FROM_LATENCY": "true",  # off by default; the last case compares it
    }
    # Automatic hedging starts once 20 requests were seen and would cut the timeout
    # short: the pure timeout is measured with it off, then with a fixed and an
    # automatic hedge (by then the health window holds enough samples).
    cases: dict[str, tuple[int | None, bool]] = {  # name: (hedge_after_ms, streamed)
        "timeout": (HEDGE_NEVER_MS, False),
        "timeout_hedged": (HEDGE_FIXED_MS, False),
        "timeout_auto_hedge": (None, False),
        "timeout_stream": (HEDGE_NEVER_MS, True),
        "timeout_hedged_stream": (HEDGE_FIXED_MS, True),
    }
    with running_gateway(bench, "gateway-timeout", timeout_env) as gateway:
        for name, (hedge_ms, stream) in cases.items():
            set_hedge(gateway, hedge_ms)
            bench.say(f"failover: primary silent {SILENT_MS} ms, {name}, hedge {hedge_ms}")
            case = failover_case(bench, gateway, silent, sizes.failover_timeout, stream=stream)
            results[name] = case | {"gateway_env": timeout_env, "hedge_after_ms": hedge_ms}
    return results


# -- 2. hedging ----------------------------------------------------------------------------


async def concurrent_load(gateway: Gateway, total: int, concurrency: int) -> list[Answer]:
    """`total` requests from `concurrency` workers (bounded fan-out in one nursery)."""
    answers: list[Answer] = []
    left = [total]

    async def worker(client: httpx.AsyncClient) -> None:
        while left[0] > 0:
            left[0] -= 1
            answers.append(await ask(client, gateway))

    async with new_client(concurrency) as client, trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker, client)
    return answers


def hedge_variant(
    bench: Bench, gateway: Gateway, name: str, prepare: Callable[[], None]
) -> dict[str, Any]:
    sizes = bench.sizes
    prepare()
    fault = {"model": "*", "delay_ms": STALL_MS, "probability": STALL_SHARE}
    bench.sim_call("DELETE", "faults")  # clearing replays the same draws for every variant
    bench.sim_call("POST", "faults", fault)
    calls0, cpu0 = bench.upstream_calls(), gateway.proc.cpu_s()
    started = time.perf_counter()
    answers = trio.run(concurrent_load, gateway, sizes.hedge_requests, sizes.hedge_concurrency)
    wall = time.perf_counter() - started
    cpu, calls = gateway.proc.cpu_s() - cpu0, bench.upstream_calls()
    bench.sim_call("DELETE", "faults")
    figures = summary(answers)
    bench.say(f"hedging {name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms")
    return figures | {
        "fault": fault,
        "concurrency": sizes.hedge_concurrency,
        "wall_s": round(wall, 2),
        "upstream_calls_per_request": {
            k: round((calls[k] - calls0[k]) / len(answers), 3) for k in calls
        },
        "gateway_cpu_ms_per_request": round(cpu * 1000 / len(answers), 3),
    }


def hedging(bench: Bench) -> dict[str, Any]:
    results: dict[str, Any] = {}
    auto = {"GATEWAY_HEDGE_FROM_LATENCY": "true"}  # off by default; this run compares it
    with running_gateway(bench, "gateway-hedging", auto) as gateway:
        trio.run(concurrent_load, gateway, HEALTH_WINDOW, 8)  # warm up
        results["off"] = hedge_variant(
            bench, gateway, "off", lambda: set_hedge(gateway, HEDGE_NEVER_MS)
        ) | {"hedge_after_ms": HEDGE_NEVER_MS}
        results["fixed"] = hedge_variant(
            bench, gateway, f"{HEDGE_FIXED_MS} ms", lambda: set_hedge(gateway, HEDGE_FIXED_MS)
        ) | {"hedge_after_ms": HEDGE_FIXED_MS}

        def automatic() -> None:
            # The health window (200 winners) still holds the stalled winners of the
            # "off" run; a fresh window of healthy requests gives the automatic delay
            # the same start a gateway in steady health would have.
            set_hedge(gateway, None)
            trio.run(concurrent_load, gateway, HEALTH_WINDOW, 8)

        results["automatic"] = hedge_variant(bench, gateway, "automatic", automatic) | {
            "hedge_after_ms": None,
            "note": "no setting: 2 x observed p95 of time to first result, 250 ms floor",
        }
    return results


# -- 3. feature cost -----------------------------------------------------------------------


def add_routing_rules(gateway: Gateway, count: int) -> None:
    """`count - 1` rules that do not match (a header condition), then one that matches
    every request for the model and names the same fallback the request does."""
    for i in range(count - 1):
        rule = {
            "name": f"team-{i}",
            "conditions": {"headers": {"x-team": f"team-{i}"}, "models": ["gpt-4o*"]},
            "actions": {"fallbacks": [FALLBACK]},
        }
        admin(gateway.port, "POST", "/v1/management/routing-rules", rule)
    matching = {
        "name": "default-fallback",
        "conditions": {"models": [PRIMARY]},
        "actions": {"fallbacks": [FALLBACK]},
    }
    admin(gateway.port, "POST", "/v1/management/routing-rules", matching)


def remove_routing_rules(gateway: Gateway) -> None:
    for rule in admin(gateway.port, "GET", "/v1/management/routing-rules")["rules"]:
        admin(gateway.port, "DELETE", f"/v1/management/routing-rules/{rule['id']}")


def throughput_point(
    bench: Bench, gateway: Gateway, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    sizes = bench.sizes
    script = load.write_script(
        bench.work / f"{name}.lua",
        json.dumps(body, separators=(",", ":")).encode(),
        {"Authorization": f"Bearer {gateway.key}", "Content-Type": "application/json"},
    )
    url = gateway.base + CHAT_PATH
    load.run_wrk(url, script, connections=sizes.throughput_concurrency, duration_s=1)
    calls0, cpu0 = bench.upstream_calls(), gateway.proc.cpu_s()
    result = load.run_wrk(
        url, script, connections=sizes.throughput_concurrency, duration_s=sizes.throughput_s
    )
    cpu, calls = gateway.proc.cpu_s() - cpu0, bench.upstream_calls()
    cpu_ms = cpu * 1000 / max(result.requests, 1)
    bench.say(f"features {name}: {result.rps:.0f} req/s, {cpu_ms:.3f} CPU ms/request")
    return {
        "rps": round(result.rps, 1),
        "requests": result.requests,
        "errors": result.errors,
        "p50_ms": round(result.p50_ms, 2),
        "p99_ms": round(result.p99_ms, 2),
        "gateway_cpu_ms_per_request": round(cpu_ms, 3),
        "upstream_calls_per_request": round(
            (calls["openai"] - calls0["openai"]) / max(result.requests, 1), 3
        ),
    }


def features(bench: Bench) -> dict[str, Any]:
    """The configurations in turn, `rounds` times (the machine's other work drifts);
    each configuration's figures are its median round by CPU per request."""
    configs = {
        "on": f"prod key with limits set; {ROUTING_RULES} routing rules (the last matches); "
        "usage log on; response cache bypassed (service.cache=skip)",
        "no_rules": "as 'on' without routing rules (routing still resolves the model)",
        "nearest_off": "no rules and a forced provider (body 'provider': 'openai'), which "
        "bypasses routing; rate limits and usage log still on",
        "off": "as 'nearest_off' on a gateway started with GATEWAY_RATE_LIMITS_ENABLED=false "
        "and GATEWAY_USAGE_LOG_ENABLED=false: rate limiting, routing and usage logging off",
    }
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    results: dict[str, Any] = {}
    with running_gateway(bench, "gateway-features", {}) as gateway:
        for _ in range(bench.sizes.feature_rounds):
            add_routing_rules(gateway, ROUTING_RULES)
            rounds["on"].append(throughput_point(bench, gateway, "on", chat_body(fallback=False)))
            remove_routing_rules(gateway)
            body = chat_body(fallback=False)
            rounds["no_rules"].append(throughput_point(bench, gateway, "no-rules", body))
            forced = chat_body(fallback=False, forced=True)
            rounds["nearest_off"].append(throughput_point(bench, gateway, "nearest-off", forced))
        add_routing_rules(gateway, ROUTING_RULES)
        results["profile_on"] = profile(bench, gateway, chat_body(fallback=False))
    switches = {"GATEWAY_RATE_LIMITS_ENABLED": "false", "GATEWAY_USAGE_LOG_ENABLED": "false"}
    with running_gateway(bench, "gateway-features-off", switches) as gateway:
        forced = chat_body(fallback=False, forced=True)
        for _ in range(bench.sizes.feature_rounds):
            rounds["off"].append(throughput_point(bench, gateway, "off", forced))
    for name, config in configs.items():
        ordered = sorted(rounds[name], key=lambda r: r["gateway_cpu_ms_per_request"])
        results[name] = ordered[len(ordered) // 2] | {"config": config, "rounds": rounds[name]}
    return results


# -- profile -------------------------------------------------------------------------------


def ensure_py_spy() -> str | None:
    found = shutil.which("py-spy") or _venv_tool("py-spy")
    if found:
        return found
    print("py-spy not found: `pip install py-spy` (one-off, not a dependency)", file=sys.stderr)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "py-spy"]
    if subprocess.run(pip, check=False).returncode != 0:
        return None
    return _venv_tool("py-spy")


def _venv_tool(name: str) -> str | None:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else None


def profile(bench: Bench, gateway: Gateway, body: dict[str, Any]) -> dict[str, Any]:
    """py-spy samples of the gateway under `wrk` load: the share of its (non-idle)
    samples whose stack passes through each feature's modules."""
    spy = ensure_py_spy()
    if spy is None:
        return {"error": "py-spy could not be installed"}
    out = bench.work / "profile.txt"
    argv = [spy, "record", "--pid", str(gateway.proc.pid), "--rate", "250", "--threads"]
    argv += ["--duration", str(bench.sizes.profile_s), "--format", "raw", "-o", str(out)]
    spying = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    script = load.write_script(
        bench.work / "profile.lua",
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {gateway.key}", "Content-Type": "application/json"},
    )
    load.run_wrk(
        gateway.base + CHAT_PATH,
        script,
        connections=bench.sizes.throughput_concurrency,
        duration_s=bench.sizes.profile_s + 1,
    )
    log, _ = spying.communicate(timeout=60)
    if spying.returncode != 0 or not out.exists():
        return {"error": f"py-spy failed ({spying.returncode}): {log.strip()[-400:]}"}
    return profile_shares(out.read_text())


def profile_shares(collapsed: str) -> dict[str, Any]:
    """From py-spy's collapsed stacks (`frame;frame;... count`): each part's share of
    all samples, counting a sample once per part whatever its depth (inclusive)."""
    total = 0
    parts = dict.fromkeys(PROFILE_PARTS, 0)
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        for part, markers in PROFILE_PARTS.items():
            if any(marker in stack for marker in markers):
                parts[part] += int(count)
    shares = {part: round(100 * n / total, 1) if total else None for part, n in parts.items()}
    return {"samples": total, "share_percent": shares, "modules": PROFILE_PARTS}


# -- output --------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    lines = ["| measurement | p50 ms | p99 ms | added p50 / p99 ms | gateway CPU ms/req |"]
    lines.append("|---|---|---|---|---|")
    for name, case in results["failover"].items():
        if "failing_over" not in case:
            continue
        f, h = case["failing_over"], case["healthy"]
        lines.append(
            f"| failover {name}: healthy | {h['p50_ms']} | {h['p99_ms']} | | "
            f"{case['gateway_cpu_ms_healthy']} |"
        )
        lines.append(
            f"| failover {name}: failing over | {f['p50_ms']} | {f['p99_ms']} | "
            f"{case['added_p50_ms']} / {case['added_p99_ms']} | "
            f"{case['gateway_cpu_ms_failover']} |"
        )
    breaker = results["failover"]["status_500_breaker"]["after_open"]
    lines.append(f"| 500, breaker open | {breaker['p50_ms']} | {breaker['p99_ms']} | | |")
    for name, case in results["hedging"].items():
        lines.append(
            f"| hedging {name} (c={case['concurrency']}, 5 % stall 2 s) | {case['p50_ms']} | "
            f"{case['p99_ms']} | | {case['gateway_cpu_ms_per_request']} |"
        )
    lines += [
        "",
        "| features | req/s | p50 ms | p99 ms | gateway CPU ms/req |",
        "|---|---|---|---|---|",
    ]
    for name in ("on", "no_rules", "nearest_off", "off"):
        case = results["features"][name]
        lines.append(
            f"| {name} | {case['rps']} | {case['p50_ms']} | {case['p99_ms']} | "
            f"{case['gateway_cpu_ms_per_request']} |"
        )
    shares = results["features"]["profile_on"].get("share_percent")
    if shares:
        lines.append("")
        lines.append("profile share (on): " + ", ".join(f"{k} {v} %" for k, v in shares.items()))
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.resilience", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small counts, about a minute")
    parser.add_argument("--json", action="store_true", help="print the results JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    pinning = machine.plan_pinning()
    os.sched_setaffinity(0, set(pinning.load))  # this process is the load generator
    work = Path(tempfile.mkdtemp(prefix="gateway-resilience-"))
    bench = Bench(work, pinning, Sizes.pick(args.quick))
    described = machine.describe()
    bench.say(f"machine: {described.label()}; scratch files in {work}")
    load_before = os.getloadavg()
    with ExitStack() as cleanup:
        start_sim(bench, cleanup)
        measured = {
            "failover": failover(bench),
            "hedging": hedging(bench),
            "features": features(bench),
        }
    results = {
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench.resilience", *(argv or sys.argv[1:])]),
        "machine": attrs.asdict(described),
        "pinning": attrs.asdict(pinning),
        "sizes": attrs.asdict(bench.sizes),
        "elapsed_s": round(time.monotonic() - bench.started, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    } | measured
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y-%m-%d-%H%M%S") + ("-quick" if args.quick else "")
    path = RESULTS / f"resilience-{stamp}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    if args.json:
        print(json.dumps(results, indent=2))
    print(table(results))
    bench.say(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
