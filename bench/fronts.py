"""Section 8, `fronts`: what the Responses and Messages front doors add over chat.

The same question (the prompt and 20 tokens back of every section) is asked of the
gateway through three doors, on the same load: `POST /v1/chat/completions`, `POST
/v1/responses` (stored, the API's default, so the store's write is counted) and `POST
/v1/messages` (`max_tokens` 20, which the simulator answers with the same 20 tokens).
Non-streamed with `wrk` at the plan's first two concurrencies, in alternating rounds (the
doors' order turns every round, as section 9 does for the floor): a door measured a
minute after chat sees another machine, so single points set one after the other gave
differences of tens of per cent either way. Each door's p50, p99 and the gateway's CPU
time per request are set against chat's of the same round, as a share (the issue's
target: within 10 %), and the median of the rounds' shares is reported. The issue's own
figure is the *added* latency: each round also measures the simulator directly (the
chat body on its own path), and a door's added p50 (its p50 less the direct one) is set
against chat's added p50 of the same round (`added_latency_over_chat_pct`, printed with
the rounds' load average). Streamed with the trio client at the streamed section's
concurrency, in alternating rounds too (the simulator's own stream among them): each
door's last-chunk p50 less the direct one against chat's of the same round
(`added_latency_over_chat_pct[door]["streamed"]`, printed as `fronts streamed c=N added
last-chunk p50 over chat's added: ...`), with the CPU per stream against chat's. One
point per door after another, as before 2026-11-27 18:10, read from +4 % to +23 % for
the same tree.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from bench import load
from bench.hotpath import medians, rounds_of
from bench.plan import Run
from bench.sections import stream_figures
from bench.sse_client import Endpoint, stream_load
from bench.stack import MODEL, Stack, Target, chat_body

PROMPT = "Say something about benchmarks."


def responses_body(stream: bool) -> bytes:
    body: dict[str, object] = {"model": MODEL, "input": PROMPT, "user": "bench"}
    if stream:
        body["stream"] = True
    return json.dumps(body, separators=(",", ":")).encode()


def messages_body(stream: bool) -> bytes:
    body: dict[str, object] = {
        "model": MODEL,
        "max_tokens": 20,
        "messages": [{"role": "user", "content": PROMPT}],
        "metadata": {"user_id": "bench"},
    }
    if stream:
        body["stream"] = True
    return json.dumps(body, separators=(",", ":")).encode()


DOORS: dict[str, tuple[str, Callable[[bool], bytes]]] = {
    "chat": ("/v1/chat/completions", chat_body),
    "responses": ("/v1/responses", responses_body),
    "messages": ("/v1/messages", messages_body),
}


def fronts(run: Run, stack: Stack) -> dict[str, Any]:
    gateway = stack.targets["gateway"]
    doors = {name: attrs.evolve(gateway, path=path) for name, (path, _) in DOORS.items()}
    measured = doors | {DIRECT: stack.targets[DIRECT]}
    plain: dict[str, dict[str, Any]] = {name: {} for name in DOORS}
    for name, target in measured.items():  # warm every door up once
        load.run_wrk(
            target.url, _script(run, name, target), connections=8, duration_s=run.plan.warmup_s
        )
    rounds, point_s = rounds_of(run)
    paired: dict[str, dict[str, Any]] = {name: {} for name in DOORS if name != "chat"}
    added: dict[str, dict[str, float]] = {name: {} for name in paired}
    loads: list[float] = []
    for concurrency in run.plan.concurrencies[:2]:
        taken = [_round(run, measured, concurrency, point_s, i) for i in range(rounds)]
        loads += [r.pop(LOAD) for r in taken]
        for name in DOORS:
            plain[name][str(concurrency)] = medians([r[name] for r in taken])
            if name != "chat":
                paired[name][str(concurrency)] = _shares(name, taken)
                added[name][str(concurrency)] = _added_share(name, taken)
        _say_added(run, concurrency, added, loads[-rounds:])
    streamed, stream_shares = _streamed(run, measured, rounds, point_s, added, loads)
    for name, shares in stream_shares.items():
        paired[name]["streamed"] = shares
    return {
        "duration_s": point_s,
        "rounds": rounds,
        "non_streamed": plain,
        "streamed": streamed,
        "added_over_chat_pct": paired,
        "added_latency_over_chat_pct": added,
        "load_average": round(statistics.median(loads), 2),
    }


DIRECT = "direct"  # the simulator alone: what every door's latency is added to
LOAD = "load_average"


def _added_share(name: str, taken: list[dict[str, Any]]) -> float:
    """The issue's figure: the median over the rounds of the door's added p50 (over the
    direct one) against chat's added p50 of the same round, in per cent."""
    return round(
        statistics.median(
            _pct(r[name]["p50_ms"] - r[DIRECT]["p50_ms"], r["chat"]["p50_ms"] - r[DIRECT]["p50_ms"])
            for r in taken
        ),
        1,
    )


def _say_added(
    run: Run, concurrency: int, added: dict[str, dict[str, float]], loads: list[float]
) -> None:
    doors = ", ".join(f"{name} {by[str(concurrency)]:+.1f} %" for name, by in added.items())
    run.say(
        f"fronts       c={concurrency:<3} added p50 over chat's added p50: {doors}"
        f" (load average {statistics.median(loads):.2f})"
    )


def _round(
    run: Run, doors: dict[str, Target], concurrency: int, point_s: float, index: int
) -> dict[str, Any]:
    """Every door (and the simulator alone) once at `concurrency`, the order turned by
    `index`; with the load average at its end."""
    names = list(doors)
    turn = index % len(names)
    order = names[turn:] + names[:turn]
    found: dict[str, Any] = {
        name: _plain_point(run, name, doors[name], concurrency, point_s) for name in order
    }
    return found | {LOAD: round(os.getloadavg()[0], 2)}


FIELDS = ("p50_ms", "p99_ms", "server_cpu_ms_per_request")


def _shares(name: str, taken: list[dict[str, Any]]) -> dict[str, float]:
    """The median over the rounds of the door's share over chat's in the same round."""
    return {
        f: round(statistics.median(_pct(r[name][f], r["chat"][f]) for r in taken), 1)
        for f in FIELDS
    }


def _script(run: Run, name: str, target: Target) -> Any:
    path = run.work / f"post-front-{name}.lua"
    if not path.exists():
        body = chat_body(False) if name == DIRECT else DOORS[name][1](False)
        load.write_script(path, body, target.headers())
    return path


def _plain_point(
    run: Run, name: str, target: Target, concurrency: int, point_s: float
) -> dict[str, Any]:
    cpu_before = target.server.cpu_s()
    result = load.run_wrk(
        target.url, _script(run, name, target), connections=concurrency, duration_s=point_s
    )
    cpu_ms = (target.server.cpu_s() - cpu_before) * 1000 / max(result.requests, 1)
    run.say(
        f"fronts       c={concurrency:<3} {name:<10} {result.rps:8.0f} req/s"
        f"  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms  {cpu_ms:.3f} CPU-ms/req"
        + (f"  errors {result.errors}" if result.errors else "")
    )
    return result.to_json() | {"server_cpu_ms_per_request": round(cpu_ms, 3)}


def _streamed(
    run: Run,
    measured: dict[str, Target],
    rounds: int,
    point_s: float,
    added: dict[str, dict[str, float]],
    loads: list[float],
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Every door's stream (and the simulator's) in alternating rounds: each door's
    median figures, and its shares over chat's (medians of the rounds' own); the issue's
    added share goes into `added` under "streamed"."""
    taken = [_stream_round(run, measured, point_s, i) for i in range(rounds)]
    loads += [r.pop(LOAD) for r in taken]
    concurrency = run.plan.stream_concurrency
    streamed = {
        name: medians([r[name] for r in taken]) | {"concurrency": concurrency} for name in DOORS
    }
    shares: dict[str, dict[str, float]] = {}
    for name in added:
        shares[name] = {
            f: round(statistics.median(_pct(r[name][f], r["chat"][f]) for r in taken), 1)
            for f in STREAM_FIELDS
        }
        added[name]["streamed"] = round(
            statistics.median(
                _pct(
                    r[name]["last_chunk_p50_ms"] - r[DIRECT]["last_chunk_p50_ms"],
                    r["chat"]["last_chunk_p50_ms"] - r[DIRECT]["last_chunk_p50_ms"],
                )
                for r in taken
            ),
            1,
        )
    doors = ", ".join(f"{name} {by['streamed']:+.1f} %" for name, by in added.items())
    cpu = ", ".join(
        f"{name} {by['server_cpu_ms_per_stream']:+.1f} %" for name, by in shares.items()
    )
    run.say(
        f"fronts       streamed c={concurrency} added last-chunk p50 over chat's added: {doors}"
        f"; CPU per stream over chat's: {cpu}"
        f" (load average {statistics.median(loads[-rounds:]):.2f})"
    )
    return streamed, shares


STREAM_FIELDS = ("last_chunk_p50_ms", "last_chunk_p99_ms", "server_cpu_ms_per_stream")


def _stream_round(
    run: Run, targets: dict[str, Target], point_s: float, index: int
) -> dict[str, Any]:
    """Every door's stream and the simulator's once, the order turned by `index`."""
    names = list(targets)
    turn = index % len(names)
    order = names[turn:] + names[:turn]
    found = {name: _stream_point(run, name, targets[name], point_s) for name in order}
    return found | {LOAD: round(os.getloadavg()[0], 2)}


def _stream_point(run: Run, name: str, target: Target, point_s: float) -> dict[str, Any]:
    concurrency = run.plan.stream_concurrency
    body = chat_body(True) if name == DIRECT else DOORS[name][1](True)
    endpoint = Endpoint("127.0.0.1", target.port, target.path, target.headers(), body)
    cpu_before, started = target.server.cpu_s(), time.perf_counter()
    times = trio.run(stream_load, endpoint, concurrency, point_s)
    figures = stream_figures(times, time.perf_counter() - started)
    cpu_ms = (target.server.cpu_s() - cpu_before) * 1000 / max(len(times.last_chunk_s), 1)
    figures["server_cpu_ms_per_stream"] = round(cpu_ms, 3)
    run.say(
        f"fronts       c={concurrency:<3} {name:<10} {figures['streams_per_s']:8.0f} streams/s"
        f"  last chunk p50 {figures['last_chunk_p50_ms']:7.2f} ms  {cpu_ms:.3f} CPU-ms/stream"
        + (f"  errors {times.errors}" if times.errors else "")
    )
    return figures


def _pct(value: float, base: float) -> float:
    return round((value - base) * 100 / base, 1) if base else 0.0
