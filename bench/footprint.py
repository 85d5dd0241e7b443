"""Install size, resident memory and start-up time of the core and of `[all]`.

    python -m bench.footprint [--work DIR] [--requests N] [--concurrency C]
                              [--usage-writer process|thread]
                              [--target NAME=VENV[:PYTHONPATH] ...]

Without `--target`, builds two fresh venvs from this tree in `--work` (kept there for
the next run): `core` (`pip install .`) and `all` (`pip install '.[all]'`). For each
target: its size on disk (as `du` counts it), then a gateway started from it (`gateway
serve`, OpenAI's and Anthropic's providers pointed at one simulator process of their own,
so the gateway's figures hold no simulator), timed from spawn to its first `/health` 200
(median of `STARTS`; the CPU time it used until then too, which a loaded machine
distorts less than the wall clock), its resident memory idle (the gateway's process; with its usage
writer's child process too), and under a short chat load (`--requests` chat completions,
`--concurrency` at a time, half of them streamed; the peak sampled every 100 ms). A
target's `PYTHONPATH` runs another tree on that venv (the figures before the extras were
taken so: the shared venv, with a checkout of the tree before them). Each process apart:
the gateway's, its usage writer's child (the tree's RSS less the gateway's), and the
tree's proportional set size (PSS: a shared library's pages split between the processes
that map them, where RSS counts them in each). `--usage-writer thread` runs the writer as
a thread of the gateway instead, for the comparison. Prints one JSON object, whose
`issue_37` entry is the issue's figure: resident memory of the core under load, the
gateway process's peak, against its 90 MiB target; docs/operations.md, "Install size and
memory", and bench/README.md, "Memory of the core", quote a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import trio

from bench import procs
from providers.catalog import load_catalog

REPO = Path(__file__).resolve().parent.parent
ADMIN_KEY = "gw_admin_footprint_0123456789abcdefghij"
STARTS = 3
READY_DEADLINE_S = 120.0
IDLE_SETTLE_S = 3.0
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello there"}]}
TARGET_MIB = 90.0  # issue 37: resident memory of the core under load


def venv_size_mib(venv: Path) -> float:
    """Disk usage of every file under `venv` (allocated blocks, as `du` counts them)."""
    blocks = sum(
        (path.lstat().st_blocks for path in venv.rglob("*") if not path.is_symlink()),
        start=0,
    )
    return round(blocks * 512 / 2**20, 1)


def build_venv(venv: Path, spec: str) -> None:
    """A fresh venv with `spec` (this tree, maybe with extras) installed, unless present."""
    if (venv / "bin" / "gateway").exists():
        return
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip: list[str | Path] = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--disable-pip-version-check", spec], check=True, cwd=REPO)


@contextmanager
def simulator(work: Path) -> Iterator[str]:
    """One simulator process (`gateway sim`), unpaced; its base URL."""
    port = procs.free_port()
    argv = [sys.executable, "-m", "gateway", "sim", "--port", str(port)]
    sim = procs.start("sim", argv, cores=_cores(), log_dir=work, cwd=REPO)
    try:
        procs.wait_ready(sim, f"http://127.0.0.1:{port}/_sim/stats", deadline_s=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        sim.stop()


def _cores() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def tree_pss_mib(pid: int) -> float:
    """Proportional set size of a process and its children (/proc/<pid>/smaps_rollup)."""
    own = 0.0
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                own = int(line.split()[1]) / 1024
                break
    return own + sum(tree_pss_mib(child) for child in procs.children(pid))


def _gateway_env(sim_url: str, pythonpath: str | None, usage_writer: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.pop("PYTHONPATH", None)
    env |= {"GATEWAY_ADMIN_KEY": ADMIN_KEY, "GATEWAY_LOG_FORMAT": "json"}
    env["GATEWAY_USAGE_WRITER"] = usage_writer
    env["GATEWAY_RATE_LIMITS_ENABLED"] = "false"  # the load is one key's, far above a plan's rpm
    catalog = load_catalog()
    for vendor in ("openai", "anthropic"):
        info = catalog.provider(vendor)
        assert info is not None
        env[f"{vendor.upper()}_API_KEY"] = "sk-footprint"
        # the vendor's API root path (OpenAI's /v1), as the demo mode points them
        env[f"{vendor.upper()}_BASE_URL"] = f"{sim_url}/{vendor}{urlparse(info.base_url).path}"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


@contextmanager
def gateway(
    venv: Path, env: Mapping[str, str], work: Path, name: str
) -> Iterator[tuple[str, procs.Proc, float, float]]:
    """A gateway from `venv` on a fresh data directory: (url, process, seconds to ready,
    CPU seconds it used until then)."""
    port = procs.free_port()
    data = Path(tempfile.mkdtemp(prefix="footprint-", dir=work))
    argv = [str(venv / "bin" / "python"), "-m", "gateway", "serve", "--host", "127.0.0.1"]
    argv += ["--port", str(port)]
    began = time.monotonic()
    proc = procs.start(
        name, [*argv, "--data-dir", str(data)], cores=_cores(), log_dir=work, env=env, cwd=work
    )
    try:
        url = f"http://127.0.0.1:{port}"
        procs.wait_ready(proc, url + "/health", deadline_s=READY_DEADLINE_S)
        yield url, proc, time.monotonic() - began, proc.cpu_s()
    finally:
        proc.stop()
        shutil.rmtree(data, ignore_errors=True)  # each start's store; the work dir stays


async def chat_load(url: str, proc: procs.Proc, requests: int, concurrency: int) -> dict[str, Any]:
    """`requests` chat completions, `concurrency` at a time; the RSS peak while they run."""
    peak = {"gateway": 0.0, "tree": 0.0, "writer": 0.0}
    failed = 0
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    limits = httpx.Limits(max_connections=concurrency)

    async def sample(cancel: trio.CancelScope) -> None:
        with cancel:
            while True:
                gateway, tree = procs.read_rss_mib(proc.pid), proc.rss_mib()
                peak["gateway"] = max(peak["gateway"], gateway)
                peak["tree"] = max(peak["tree"], tree)
                peak["writer"] = max(peak["writer"], tree - gateway)
                await trio.sleep(0.1)

    async def one(client: httpx.AsyncClient, index: int) -> None:
        nonlocal failed
        body = CHAT | {"stream": index % 2 == 1}
        response = await client.post("/v1/chat/completions", json=body)
        failed += response.status_code != 200

    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=60
    ) as client:
        sampling = trio.CancelScope()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample, sampling)
            sender, receiver = trio.open_memory_channel[int](0)

            async def worker() -> None:
                async for index in receiver:
                    await one(client, index)

            async with trio.open_nursery() as workers:
                for _ in range(concurrency):
                    workers.start_soon(worker)
                async with sender:
                    for index in range(requests):
                        await sender.send(index)
            sampling.cancel()
    return {
        "requests": requests,
        "failed": failed,
        "rss_peak_mib": round(peak["gateway"], 1),
        "rss_peak_with_writer_mib": round(peak["tree"], 1),
        "writer_rss_peak_mib": round(peak["writer"], 1),
        "pss_tree_after_mib": round(tree_pss_mib(proc.pid), 1),
    }


def measure(
    name: str,
    venv: Path,
    pythonpath: str | None,
    work: Path,
    sim_url: str,
    requests: int,
    concurrency: int,
    usage_writer: str,
) -> dict[str, Any]:
    env = _gateway_env(sim_url, pythonpath, usage_writer)
    starts: list[float] = []
    cpu: list[float] = []
    figures: dict[str, Any] = {"venv_mib": venv_size_mib(venv)}
    for attempt in range(STARTS):
        with gateway(venv, env, work, f"{name}-{attempt}") as (url, proc, seconds, cpu_s):
            starts.append(seconds)
            cpu.append(cpu_s)
            if attempt < STARTS - 1:
                continue
            time.sleep(IDLE_SETTLE_S)
            figures["rss_idle_mib"] = round(procs.read_rss_mib(proc.pid), 1)
            figures["rss_idle_with_writer_mib"] = round(proc.rss_mib(), 1)
            figures["writer_rss_idle_mib"] = round(proc.rss_mib() - procs.read_rss_mib(proc.pid), 1)
            figures["pss_tree_idle_mib"] = round(tree_pss_mib(proc.pid), 1)
            figures["load"] = trio.run(chat_load, url, proc, requests, concurrency)
            time.sleep(IDLE_SETTLE_S)
            figures["rss_after_load_mib"] = round(procs.read_rss_mib(proc.pid), 1)
    figures["start_s_median"] = round(statistics.median(starts), 2)
    figures["start_cpu_s_median"] = round(statistics.median(cpu), 2)
    figures["start_s_all"] = [round(s, 2) for s in starts]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.footprint")
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "gateway-footprint"
    )
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--usage-writer", choices=("process", "thread"), default="process")
    parser.add_argument("--target", action="append", default=[], help="NAME=VENV[:PYTHONPATH]")
    args = parser.parse_args(argv)
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    targets = [_target(spec) for spec in args.target]
    if not targets:
        build_venv(work / "venv-core", ".")
        build_venv(work / "venv-all", ".[all]")
        targets = [("core", work / "venv-core", None), ("all", work / "venv-all", None)]
    results: dict[str, Any] = {}
    with simulator(work) as sim_url:
        for name, venv, pythonpath in targets:
            results[name] = measure(
                name,
                venv,
                pythonpath,
                work,
                sim_url,
                args.requests,
                args.concurrency,
                args.usage_writer,
            )
    results["issue_37"] = {name: issue_figure(figures) for name, figures in results.items()}
    print(json.dumps(results, indent=2))
    return 0


def issue_figure(figures: Mapping[str, Any]) -> dict[str, Any]:
    """Issue 37's figure for one target: the gateway process's peak under load against
    the target (score 1.0 on it, as `bench.checks` scores), with the tree's beside it."""
    peak: float = figures["load"]["rss_peak_mib"]
    return {
        "gateway_rss_peak_mib": peak,
        "target_mib": TARGET_MIB,
        "score": round(TARGET_MIB / peak, 2),
        "tree_rss_peak_mib": figures["load"]["rss_peak_with_writer_mib"],
        "tree_pss_after_load_mib": figures["load"]["pss_tree_after_mib"],
    }


def _target(spec: str) -> tuple[str, Path, str | None]:
    name, _, rest = spec.partition("=")
    venv, _, pythonpath = rest.partition(":")
    return name, Path(venv), pythonpath or None


if __name__ == "__main__":
    raise SystemExit(main())
