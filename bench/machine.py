"""The machine a run happened on, and which core each process gets.

Every figure and table names the machine: numbers from a 2-core VM and from a laptop
are not comparable, and the pinning decides who competes with whom for a core.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import attrs


@attrs.frozen
class Machine:
    cores: int
    cpu_model: str
    memory_mib: int
    kernel: str
    python: str
    # Millions of iterations per second of a plain Python loop (`python_speed`): the same
    # VM type runs at different speeds on different hosts and days, so figures from two
    # runs compare only beside this.
    python_mops: float = 0.0

    def label(self) -> str:
        """One line for chart footers and table headers."""
        return (
            f"{self.cores} cores, {self.cpu_model}, {self.memory_mib // 1024} GiB RAM, "
            f"Python loop {self.python_mops:.1f} M/s"
        )


@attrs.frozen
class Pinning:
    """Cores per role. The gateway (and LiteLLM, measured at other times) get a core of
    their own; the simulator and the load generator share the other one, which is also
    what the direct-to-simulator baseline runs on."""

    gateway: tuple[int, ...]
    litellm: tuple[int, ...]
    simulator: tuple[int, ...]
    load: tuple[int, ...]


def describe() -> Machine:
    return Machine(
        cores=os.cpu_count() or 1,
        cpu_model=_cpu_model(),
        memory_mib=_memory_mib(),
        kernel=platform.release(),
        python=platform.python_version(),
        python_mops=python_speed(),
    )


SPEED_LOOP = 2_000_000


def python_speed(rounds: int = 3) -> float:
    """The best of `rounds` timings of a 2-million-step addition loop, in millions of
    steps per second (about 0.3 s in all). The best, not the mean: it is the machine's
    speed with the least interference, which is what makes two runs comparable."""
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        total = 0
        for step in range(SPEED_LOOP):
            total += step
        best = min(best, time.perf_counter() - began)
    return round(SPEED_LOOP / best / 1e6, 2)


def plan_pinning() -> Pinning:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        one = (cores[0],)
        return Pinning(one, one, one, one)
    server, rest = (cores[0],), tuple(cores[1:])
    return Pinning(gateway=server, litellm=server, simulator=rest, load=rest)


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def _memory_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0
