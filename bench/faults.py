"""`python -m bench.faults [--seconds S] [--rate R]`: a soak under random upstream faults.

A real gateway process (`gateway serve --demo`, simulators inside) serves every endpoint
family (chat plain and streamed, embeddings, rerank, speech, transcription, OCR, files)
while the simulators inject faults into a share `rate` of upstream requests: 429, 500 and
529 answers, timeouts (a first byte later than the gateway's deadline), slow first bytes
(within it), connection resets, streams that stop halfway or stall, malformed JSON and
SSE. Meanwhile `/health` is polled.

What must hold (each is checked and reported per family): every request ends within its
deadline in a success, a fallback or a spec error envelope, and a broken stream ends with
an error event (`bench.fault_requests` judges each answer); no task, file descriptor or
connection leak (live trio tasks and open descriptors, read from `/metrics`, back to
their level once the soak is over); RSS growth under 5 %; `/health` answers throughout.

How RSS is judged. A leak grows with the requests served; a process reaching its working
set grows at first and then levels off (glibc's arenas and SQLite's page caches reach their
high-water marks, the rate-limit windows fill for their 60 s, the heap of trio's deadlines
is pruned lazily: measured with tracemalloc and mallinfo2, Python's own heap stayed within
0.2 MiB while RSS grew 6 MiB in the first minute). So the soak is looked at, at rest,
after each of its two halves, and a leak is RSS growing over the second half alone by half
of `RSS_LIMIT` (what a leak of `RSS_LIMIT` over the whole soak grows in each half); a soak
longer than `WORKING_SET_S` (the bench's five minutes) must also stay under it from
start to end. Before the first look each family is asked once with every upstream failing,
so that the local engines the fallbacks load (Whisper's model: +130 MiB) are loaded then and
not at a random moment of the soak.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from bench import procs
from bench.fault_requests import (
    Outcome,
    detail_of,
    outcome_counts,
    requests_by_family,
    timed,
)
from bench.process_rig import GatewayProcess, admin_headers, sim_control
from bench.sampling import percentile

# The gateway's deadlines, shortened so that a timeout fault costs seconds, not minutes.
GATEWAY_ENV = {
    "GATEWAY_SIM_TTFT_MS": "20",
    "GATEWAY_SIM_TOKENS_PER_SECOND": "400",
    "GATEWAY_UPSTREAM_TIMEOUT_S": "5",
    "GATEWAY_FIRST_CHUNK_TIMEOUT_S": "2",
    "GATEWAY_STREAM_IDLE_TIMEOUT_S": "2",
    "GATEWAY_HEALTH_PROBE_INTERVAL_S": "5",
    # A connection the client closed ends at once (gateway/platform/connections.py); an
    # idle one kept alive lasts until this timeout: short here, so that the look after
    # the soak counts leaks, not idle connections about to be closed.
    "GATEWAY_KEEP_ALIVE_TIMEOUT_S": "2",
}
# The longest a request may take: every candidate of a chain may use its whole deadline.
REQUEST_DEADLINE_S = 40.0
HEALTH_EVERY_S = 0.5
HEALTH_DEADLINE_S = 5.0
RSS_LIMIT = 0.05
# The longest time window the gateway keeps per key (rate limits: 60 s), twice: past it the
# working set has been reached and the whole soak's growth is judged too.
WORKING_SET_S = 120.0
# The warm-up goes on until the last seconds' resident memory stays within this.
SETTLED_SAMPLES, SETTLED_MIB, WARM_MORE_S = 4, 1.0, 20
# Idle keep-alive connections to the simulators come and go with the pool; past these
# margins a count that grew is a leak.
TASK_SLACK, FD_SLACK = 10, 24
# Faults as the simulators take them: tried in order, each with its share of `rate`.
FaultMix = tuple[tuple[str, float, dict[str, Any]], ...]
FAULT_MIX: FaultMix = (
    ("429", 0.15, {"status": 429}),
    ("500", 0.15, {"status": 500}),
    ("529", 0.1, {"status": 529}),
    ("timeout", 0.1, {"delay_ms": 2500}),
    ("slow_first_byte", 0.1, {"delay_ms": 400}),
    ("reset", 0.1, {"reset": True}),
    ("stream_cut", 0.1, {"stop_after_chunks": 2}),
    ("stream_stall", 0.05, {"stop_after_chunks": 2, "stall_ms": 3000}),
    ("malformed", 0.15, {"malformed": True}),
)
# Every upstream answering 500: each family falls back to its local engine, if it has one.
FIRST_USE_FAULT: FaultMix = (("500", 1.0, {"status": 500}),)
# How often each family is asked (the local fallbacks of speech, transcription and OCR
# are heavy on a small machine: they run less often).
WEIGHTS = {
    "chat": 5,
    "chat_stream": 5,
    "embeddings": 3,
    "rerank": 3,
    "speech": 2,
    "transcription": 1,
    "ocr": 1,
    "files": 1,
}


@attrs.define
class Health:
    checks: int = 0
    failures: list[str] = attrs.field(factory=list)


@attrs.frozen
class Process:
    tasks: float
    fds: float
    rss_mib: float


def install_faults(gateway: GatewayProcess, rate: float, mix: FaultMix = FAULT_MIX) -> None:
    """Every fault of the mix on every model, at its share of `rate`. A later fault's
    chance is raised so that each kind keeps its share of the requests."""
    sim_control(gateway, "DELETE", "/faults")
    left = 1.0
    for _, share, fields in mix:
        chance = min(1.0, rate * share / left)
        sim_control(gateway, "POST", "/faults", {"model": "*", "probability": chance} | fields)
        left -= rate * share


async def watch_health(gateway: GatewayProcess, health: Health) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, trust_env=False) as client:
        while True:
            health.checks += 1
            try:
                with trio.fail_after(HEALTH_DEADLINE_S):
                    answer = await client.get("/health")
                if answer.status_code != 200:
                    health.failures.append(f"{answer.status_code}")
            except (httpx.TransportError, trio.TooSlowError) as exc:
                health.failures.append(type(exc).__name__)
            await trio.sleep(HEALTH_EVERY_S)


async def worker(
    client: httpx.AsyncClient,
    requests: dict[str, Any],
    rng: random.Random,
    until: float,
    outcomes: list[Outcome],
) -> None:
    families = list(WEIGHTS)
    weights = [WEIGHTS[f] for f in families]
    while trio.current_time() < until:
        family = rng.choices(families, weights)[0]
        outcomes.append(await timed(family, requests[family], client, REQUEST_DEADLINE_S))


def process_figures(gateway: GatewayProcess) -> Process:
    with httpx.Client(base_url=gateway.url, headers=admin_headers(), trust_env=False) as c:
        text = c.get("/metrics").text
    values = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line.startswith(("gateway_trio_tasks ", "gateway_open_fds "))
    }
    return Process(values["gateway_trio_tasks"], values["gateway_open_fds"], rss(gateway))


def rss(gateway: GatewayProcess) -> float:
    return procs.read_rss_mib(gateway.pid)


async def settle(gateway: GatewayProcess, seconds: float) -> Process:
    """The process at rest: faults off, the last requests done, then a look."""
    await trio.to_thread.run_sync(sim_control, gateway, "DELETE", "/faults")
    await trio.sleep(seconds)
    return await trio.to_thread.run_sync(process_figures, gateway)


async def soak(
    gateway: GatewayProcess, *, seconds: float, rate: float, concurrency: int, seed: int
) -> dict[str, Any]:
    """Warm up under the same faults and concurrency until resident memory settles, look
    at the process at rest, soak, look again at rest: the two looks see the same kind of
    idle process, one that has already served every kind of answer (a fallback, an error
    envelope, a stream cut mid-way) and loaded what those load on first use."""
    requests = requests_by_family(ocr_document())
    rng = random.Random(seed)
    health = Health()
    rss_samples: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_health, gateway, health)
        await first_uses(gateway, requests)
        await trio.to_thread.run_sync(install_faults, gateway, rate)
        await warm_up(gateway, requests, rng, max(3.0, seconds * 0.15), concurrency, rss_samples)
        looks = [await settle(gateway, 2.0)]
        outcomes: list[Outcome] = []
        for _ in range(2):
            await trio.to_thread.run_sync(install_faults, gateway, rate)
            outcomes += await load(gateway, requests, rng, seconds / 2, concurrency, rss_samples)
            looks.append(await settle(gateway, 3.0))
        nursery.cancel_scope.cancel()
    return report(outcomes, health, looks, rss_samples, seconds=seconds, rate=rate)


async def first_uses(gateway: GatewayProcess, requests: dict[str, Any]) -> None:
    """Every family asked once while every upstream fails: the fallbacks' local engines
    (speech, transcription, OCR) load now, before the first look at the process."""
    await trio.to_thread.run_sync(install_faults, gateway, 1.0, FIRST_USE_FAULT)
    async with httpx.AsyncClient(
        base_url=gateway.url, headers=admin_headers(), timeout=None, trust_env=False
    ) as client:
        for family in WEIGHTS:
            await timed(family, requests[family], client, REQUEST_DEADLINE_S)


async def warm_up(
    gateway: GatewayProcess,
    requests: dict[str, Any],
    rng: random.Random,
    least_s: float,
    concurrency: int,
    rss_samples: list[float],
) -> None:
    """Load for `least_s`, then on, a second at a time, until the resident memory of the
    last seconds stays within `SETTLED_MIB` (at most `WARM_MORE_S` more). A fixed warm-up
    took its look while the first uses were still loading (128 -> 136 MiB over the first
    ~8 s, flat after), and the 20 s test read the rest of that climb as growth."""
    await load(gateway, requests, rng, least_s, concurrency, rss_samples)
    for _ in range(WARM_MORE_S):
        recent = rss_samples[-SETTLED_SAMPLES:]
        if len(recent) == SETTLED_SAMPLES and max(recent) - min(recent) < SETTLED_MIB:
            return
        await load(gateway, requests, rng, 1.0, concurrency, rss_samples)


async def load(
    gateway: GatewayProcess,
    requests: dict[str, Any],
    rng: random.Random,
    seconds: float,
    concurrency: int,
    rss_samples: list[float],
) -> list[Outcome]:
    """`concurrency` clients for `seconds`; their connections are closed at the end."""
    outcomes: list[Outcome] = []
    until = trio.current_time() + seconds
    async with (
        httpx.AsyncClient(
            base_url=gateway.url, headers=admin_headers(), timeout=None, trust_env=False
        ) as client,
        trio.open_nursery() as nursery,
    ):
        for _ in range(concurrency):
            nursery.start_soon(worker, client, requests, rng, until, outcomes)
        while trio.current_time() < until:
            await trio.sleep(1.0)
            rss_samples.append(rss(gateway))
    return outcomes


def rss_leaks(looks: Sequence[Process], seconds: float) -> list[str]:
    """RSS growth over the soak's second half (a leak keeps growing; a working set levels
    off), and over the whole soak once it is longer than `WORKING_SET_S`."""
    before, middle, after = looks
    leaks = []
    late = (after.rss_mib - middle.rss_mib) / middle.rss_mib
    if late >= RSS_LIMIT / 2:  # a leak of RSS_LIMIT over the soak grows half that per half
        leaks.append(f"RSS grew {late:.1%} over the soak's second half")
    whole = (after.rss_mib - before.rss_mib) / before.rss_mib
    if seconds >= WORKING_SET_S and whole >= RSS_LIMIT:
        leaks.append(f"RSS grew {whole:.1%} over the soak")
    return leaks


def report(
    outcomes: list[Outcome],
    health: Health,
    looks: Sequence[Process],
    rss_samples: list[float],
    *,
    seconds: float,
    rate: float,
) -> dict[str, Any]:
    families: dict[str, Any] = {}
    for family in WEIGHTS:
        mine = [o for o in outcomes if o.family == family]
        times = sorted(o.seconds for o in mine)
        families[family] = {
            "requests": len(mine),
            "outcomes": outcome_counts(mine),
            "p99_s": round(percentile(times, 99), 3) if times else None,
            "violations": detail_of(mine),
        }
    before, middle, after = looks  # each at rest
    growth = (after.rss_mib - before.rss_mib) / before.rss_mib
    leaks = []
    if after.tasks > before.tasks + TASK_SLACK:
        leaks.append(f"trio tasks {before.tasks:.0f} -> {after.tasks:.0f}")
    if after.fds > before.fds + FD_SLACK:
        leaks.append(f"open fds {before.fds:.0f} -> {after.fds:.0f}")
    return {
        "seconds": seconds,
        "fault_rate": rate,
        "requests": len(outcomes),
        "families": families,
        "violations": sum(1 for o in outcomes if o.violation),
        "process": {
            "before": attrs.asdict(before),
            "middle": attrs.asdict(middle),
            "after": attrs.asdict(after),
            "rss_growth": round(growth, 4),
            "rss_growth_second_half": round((after.rss_mib - middle.rss_mib) / middle.rss_mib, 4),
            "rss_peak_mib": round(max(rss_samples), 1),
        },
        "leaks": leaks + rss_leaks(looks, seconds),
        "health": {"checks": health.checks, "failures": health.failures[:20]},
    }


def ocr_document() -> bytes:
    """A one-page PDF with a text layer (fpdf2 is a development dependency)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=14)
    pdf.add_page()
    pdf.multi_cell(0, 10, "Invoice 4711. Total: 12 EUR.")
    return bytes(pdf.output())


async def run(
    work: Path, *, seconds: float, rate: float, concurrency: int = 8, seed: int = 21
) -> dict[str, Any]:
    gateway = GatewayProcess(work / "data", procs.free_port(), work, dict(GATEWAY_ENV))
    await trio.to_thread.run_sync(gateway.start)
    try:
        started = time.perf_counter()
        result = await soak(gateway, seconds=seconds, rate=rate, concurrency=concurrency, seed=seed)
        result["wall_s"] = round(time.perf_counter() - started, 1)
    finally:
        await trio.to_thread.run_sync(gateway.stop)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--rate", type=float, default=0.2, help="share of upstream calls faulted")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="faults-"))
    try:
        result = trio.run(
            lambda: run(
                work,
                seconds=args.seconds,
                rate=args.rate,
                concurrency=args.concurrency,
                seed=args.seed,
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    bad = result["violations"] or result["leaks"] or result["health"]["failures"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
