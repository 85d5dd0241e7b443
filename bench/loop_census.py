"""What lands on the event loop between a lone request's steps, counted (issue 37's c=1 tail).

A request at c=1 waits for whatever the loop runs between its own steps: another task's
step (the access log's flush, the usage writer's batch hand-off, a periodic sweep), a
garbage collection, or an O(n) piece of work inside one of its own steps (a log cut at
the front, a batch formatted at once). A timeline of the slow requests says when they
were slow; this says what ran, by a count that does not depend on how busy the host is:

- **calls** (`--count calls`): the Python and C function calls made in each task step
  (`sys.setprofile`), by task. A step whose count is far above its task's median is
  O(n) work landing on one request; the functions it called most are listed. Slows the
  gateway several times over, so rates differ from the bench's: compare per request.
- **cpu** (`--count cpu`): each step's thread CPU time, by task (cheap; the host's
  contention inflates it, preemption does not).
- **gc**: every collection, by generation, with the young counts it started from.

`python -m bench.loop_census serve ARGS` runs `bench.core_serve` (a core install's
gateway) with the census on and writes it as JSON to `$LOOP_CENSUS_OUT` at exit;
`python -m bench.loop_census report FILE [START END]` prints it by task, for the steps
between two epoch times when given (one load point's).
"""

from __future__ import annotations

import atexit
import collections
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import trio

BIG_STEP_FACTOR = 3  # a step with this many times its task's median count is listed
TOP_CALLS = 12


class StepCensus(trio.abc.Instrument):
    """Per task step: its count (calls or CPU microseconds), the time it ended; with
    calls, the functions of the steps over `big_calls`."""

    def __init__(self, *, count: str = "calls", big_calls: int = 3000) -> None:
        self.count = count
        self.big_calls = big_calls
        self.steps: list[tuple[float, str, float]] = []  # (ended, task name, count)
        self.big: list[tuple[float, str, int, list[tuple[str, int]]]] = []
        self._calls: collections.Counter[str] = collections.Counter()
        self._began = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if self.count == "calls":
            self._calls.clear()
            sys.setprofile(self._on_call)
        else:
            self._began = time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if self.count != "calls":
            used_us = (time.thread_time() - self._began) * 1e6
            self.steps.append((time.time(), task.name, round(used_us, 1)))
            return
        sys.setprofile(None)
        calls = sum(self._calls.values())
        self.steps.append((time.time(), task.name, calls))
        if calls > self.big_calls:
            self.big.append((time.time(), task.name, calls, self._calls.most_common(TOP_CALLS)))

    def _on_call(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            self._calls[f"{Path(code.co_filename).name}:{code.co_name}"] += 1
        elif event == "c_call":
            self._calls[f"C:{getattr(arg, '__qualname__', arg)}"] += 1


class GcCensus:
    """Every collection: (ended, generation, thread CPU microseconds, young counts)."""

    def __init__(self) -> None:
        self.collections: list[tuple[float, int, float, tuple[int, int, int]]] = []
        self._began = 0.0
        self._counts = (0, 0, 0)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began, self._counts = time.thread_time(), gc.get_count()
            return
        used_us = round((time.thread_time() - self._began) * 1e6, 1)
        self.collections.append((time.time(), info["generation"], used_us, self._counts))


def summary(census: dict[str, Any], start: float = 0.0, end: float = float("inf")) -> str:
    """The census by task (steps, count per step p50 / p99 / max), the listed big steps
    and the collections, for what ended between `start` and `end`."""
    by_task: dict[str, list[float]] = collections.defaultdict(list)
    for ended, name, count in census["steps"]:
        if start <= ended <= end:
            by_task[name].append(count)
    unit = "calls" if census["count"] == "calls" else "CPU us"
    lines = [f"task steps between the marks, {unit} per step:"]
    for name, counts in sorted(by_task.items(), key=lambda kv: -sum(kv[1])):
        counts.sort()
        lines.append(
            f"  {len(counts):7d} steps  p50 {_at(counts, 0.5):9.1f}  p99 {_at(counts, 0.99):9.1f}"
            f"  max {counts[-1]:9.1f}  {name}"
        )
    lines += _big_steps(census, by_task, start, end)
    gens = collections.Counter(g for ended, g, _, _ in census["gc"] if start <= ended <= end)
    lines.append(f"collections: {dict(sorted(gens.items())) or 'none'}")
    return "\n".join(lines)


def _big_steps(
    census: dict[str, Any], by_task: dict[str, list[float]], start: float, end: float
) -> list[str]:
    """The steps over `BIG_STEP_FACTOR` times their task's median, with what they called."""
    lines = []
    for ended, name, calls, top in census.get("big", []):
        counts = by_task.get(name)
        if start <= ended <= end and counts and calls > BIG_STEP_FACTOR * _at(counts, 0.5):
            named = ", ".join(f"{fn} {n}" for fn, n in top[:6])
            lines.append(f"  big step: {calls} calls in {name}: {named}")
    return lines


def _at(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def install(count: str, out: Path) -> None:
    """Census every `trio.run` of this process from now on; written to `out` at exit."""
    steps, collections_ = StepCensus(count=count), GcCensus()
    gc.callbacks.append(collections_)
    original: Callable[..., Any] = trio.run

    def run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), steps]
        return original(*args, **kwargs)

    trio.run = run  # type: ignore[assignment]  # the same call, one instrument more

    def write() -> None:
        sys.setprofile(None)
        census = {"count": count, "steps": steps.steps, "big": steps.big}
        out.write_text(json.dumps(census | {"gc": collections_.collections}))

    atexit.register(write)


def main(argv: list[str]) -> int:
    if argv[:1] == ["report"] and len(argv) in (2, 4):
        census = json.loads(Path(argv[1]).read_text())
        marks = [float(a) for a in argv[2:4]]
        print(summary(census, *marks))
        return 0
    install(os.environ.get("LOOP_CENSUS_COUNT", "calls"), Path(os.environ["LOOP_CENSUS_OUT"]))
    from bench.core_serve import main as serve

    return serve(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
