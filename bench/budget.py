"""Section "budget" (issue 37): where the gateway's CPU per relayed chat request goes.

`py-spy` samples the gateway (200 Hz, without pausing it) while `wrk` loads it at c=32
(cache off: every request relayed). Each sample is given to the stage of its innermost
frame that belongs to one (`STAGES`, by the file it is in: the server and h11 framing,
authentication, body parsing, planning, admission and limits, ...); a sample in the
scheduler or a library with no stage of ours above it is "trio scheduler and glue". A
stage's share of the samples times the CPU-ms per request of the same window is its
CPU per request. Garbage collection is counted apart, exactly: the gateway times every
collection (`gateway_gc_pause_seconds` on /metrics), and the window's total is divided
by its requests.

Sample shares hardly depend on the machine's load (a busy host slows every stage
alike), which is why they, and not wall-clock figures, are the guide on a shared
machine. The table goes into bench/README.md ("The budget per request").
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench import load
from bench.hotpath import untraced_gateway
from bench.plan import Run
from bench.sections import wrk_script
from bench.stack import ADMIN_KEY, Stack, Target

SAMPLE_HZ = 200
GLUE = "trio scheduler and glue"
# Files (py-spy names them from their package, or the stdlib's name alone) whose frames
# are nobody's stage: the innermost frame with a stage above them decides.
GENERIC = (
    "trio/",
    "outcome/",
    "<attrs generated",
    "contextlib.py",
    "<frozen",
    "abc.py",
    "enum.py",
    "typing.py",
    "functools.py",
    "attr/",
    "attrs/",
    "sniffio",
    "<string>",
    "threading.py",
    "copy.py",
    "re/",
    "uuid.py",
    "_strptime.py",
    "datetime.py",
    "json/",
    "weakref",
    "collections/",
    "email/",
    "locale.py",
    "_weakrefset.py",
    "__doc__",
    "gateway/__main__.py",
    "gateway/app/cli.py",
)
# (stage, the files or folders whose frames are the stage's), the first match wins.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "server and h11 framing",
        (
            "hypercorn/",
            "h11/",
            "wsgiref/",
            "gateway/platform/connections.py",
            "gateway/platform/listen.py",
            "gateway/platform/wire_errors.py",
            "gateway/platform/request_link.py",
        ),
    ),
    (
        "fast path, exchange, drain",
        (
            "gateway/platform/asgi.py",
            "gateway/platform/exchange.py",
            "gateway/platform/drain.py",
            "gateway/platform/doc_links.py",
            "gateway/platform/upload_pace.py",
            "gateway/chat/routes.py",
        ),
    ),
    ("auth", ("gateway/platform/auth.py", "gateway/platform/callers.py", "store/secrets.py")),
    (
        "body parsing",
        (
            "gateway/chat/input.py",
            "gateway/chat/options_input.py",
            "gateway/platform/params.py",
            "gateway/platform/web.py",
            "gateway/platform/jsonio.py",
            "gateway/upstream/options.py",
            "providers/chat_params.py",
        ),
    ),
    (
        "planning",
        (
            "gateway/chat/plan.py",
            "gateway/chat/trip.py",
            "gateway/chat/resolutions.py",
            "gateway/chat/model_fit.py",
            "gateway/chat/tasks.py",
            "gateway/chat/cache/",
            "gateway/upstream/plan.py",
            "gateway/upstream/resolve.py",
            "gateway/upstream/routing/",
            "gateway/upstream/registry.py",
            "gateway/upstream/labels.py",
            "gateway/upstream/facts.py",
            "providers/catalog.py",
            "providers/chat_support.py",
        ),
    ),
    ("admission and limits", ("gateway/upstream/admission.py", "gateway/upstream/limits/")),
    ("agent and organisation checks", ("gateway/agents/", "gateway/organization/")),
    (
        "upstream client",
        (
            "providers/upstream/",
            "providers/http.py",
            "providers/openai",
            "providers/types/",
            "streams/",
            "gateway/upstream/chain.py",
            "gateway/upstream/circuit.py",
            "gateway/upstream/health.py",
            "gateway/chat/calls.py",
        ),
    ),
    (
        "the engine and the chat service",
        ("gateway/upstream/engine.py", "gateway/chat/service.py"),
    ),
    (
        "accounting",
        (
            "gateway/upstream/accounting.py",
            "gateway/upstream/footprint_render.py",
            "providers/footprint.py",
            "providers/pricing",
        ),
    ),
    (
        "usage record and its hand-off",
        ("gateway/upstream/usage.py", "gateway/workers/usage", "store/"),
    ),
    (
        "metrics",
        (
            "gateway/operator/metrics.py",
            "gateway/operator/middleware.py",
            "gateway/operator/families.py",
            "gateway/platform/context.py",
            "prometheus_client/",
        ),
    ),
    ("logs", ("logging/", "gateway/operator/logs.py", "gateway/operator/pauses.py")),
    ("rendering", ("gateway/chat/render.py", "gateway/chat/body.py")),
)
FRAME = re.compile(r"(.*) \((.*):(\d+)\)$")


def stage_of(path: str) -> str | None:
    """The stage a frame's file belongs to; None for a generic frame (pure)."""
    if path.startswith(GENERIC):
        return None
    for stage, prefixes in STAGES:
        if path.startswith(prefixes):
            return stage
    return "other"


def attribute(lines: Iterable[str]) -> Counter[str]:
    """Samples per stage from py-spy's raw (collapsed) output: `frame;frame;... count`,
    outermost first; the innermost frame that has a stage decides (pure)."""
    found: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        found[_innermost_stage(stack.split(";"))] += int(count)
    return found


def _innermost_stage(frames: list[str]) -> str:
    for frame in reversed(frames):
        match = FRAME.match(frame)
        if match is None:
            continue
        stage = stage_of(match.group(2))
        if stage is not None:
            return stage
    return GLUE


def budget(run: Run, stack: Stack) -> dict[str, Any]:
    """The stages' shares on a gateway without pause tracing, as section hotpath measures
    (the stack's gateway traces pauses for section 1's timeline: a diagnostic)."""
    spy = _py_spy()
    if spy is None:
        return {"error": "py-spy is not installed (pip install py-spy)"}
    with ExitStack() as cleanup:
        gateway = untraced_gateway(run, stack, cleanup)
        load.run_wrk(
            gateway.url, wrk_script(run, gateway), connections=32, duration_s=run.plan.warmup_s
        )
        return _sampled(run, gateway, spy)


def _sampled(run: Run, gateway: Target, spy: str) -> dict[str, Any]:
    duration = 8.0 if run.plan.quick else 20.0
    gc_before, cpu_before = _gc_seconds(gateway.port), gateway.server.cpu_s()
    samples_file = run.work / "budget-py-spy.txt"
    with ThreadPoolExecutor(1) as pool:
        loaded = pool.submit(
            load.run_wrk,
            gateway.url,
            wrk_script(run, gateway),
            connections=32,
            duration_s=duration + 2,
        )
        time.sleep(1.0)
        _record(spy, gateway.server.pid, duration, samples_file)
        result = loaded.result()
    cpu_ms = (gateway.server.cpu_s() - cpu_before) * 1000 / max(result.requests, 1)
    gc_ms = (_gc_seconds(gateway.port) - gc_before) * 1000 / max(result.requests, 1)
    samples = attribute(samples_file.read_text().splitlines())
    run.say(f"budget: {sum(samples.values())} samples, {cpu_ms:.3f} CPU-ms per request")
    return figures(samples, cpu_ms, gc_ms) | {"rps": round(result.rps, 1)}


def figures(samples: Counter[str], cpu_ms: float, gc_ms: float) -> dict[str, Any]:
    """Each stage's share of the samples and its CPU per request (pure)."""
    total = sum(samples.values()) or 1
    stages = {
        stage: {
            "share_pct": round(count * 100 / total, 1),
            "cpu_us_per_request": round(count / total * cpu_ms * 1000, 1),
        }
        for stage, count in samples.most_common()
    }
    return {
        "cpu_ms_per_request": round(cpu_ms, 3),
        "gc_ms_per_request": round(gc_ms, 4),
        "samples": total,
        "stages": stages,
    }


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _record(spy: str, pid: int, duration: float, output: Path) -> None:
    argv = [spy, "record", "-p", str(pid), "-r", str(SAMPLE_HZ), "-d", str(int(duration))]
    argv += ["-f", "raw", "-o", str(output), "--nonblocking"]
    subprocess.run(argv, check=True, capture_output=True, timeout=duration + 30)


def _gc_seconds(port: int) -> float:
    """The gateway's collections so far, in seconds (every generation)."""
    with httpx.Client(timeout=10, trust_env=False) as client:
        text = client.get(
            f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        ).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("gateway_gc_pause_seconds_sum")
    )
