"""How long and how hard each section runs (full or --quick), and progress lines."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import attrs

from bench.machine import Machine, Pinning

SECTIONS = (
    "nonstream",
    "stream",
    "open-streams",
    "soak",
    "ceiling",
    "floor",
    "workers",
    "fronts",
    "observability",
    "hotpath",
    "budget",
    "instructions",
)
# The soak runs before the open streams: thousands of held streams leave the heap
# larger than steady load does, and a soak starting there would hide a slow leak. The
# floor runs right after section 1, whose gateway figures it is set against.
RUN_ORDER = (
    "nonstream",
    "floor",
    "hotpath",
    "budget",
    "stream",
    "fronts",
    "soak",
    "open-streams",
    "ceiling",
    "workers",
    "observability",
    "instructions",
)


@attrs.frozen
class Plan:
    quick: bool
    point_s: float  # one load point (one target at one concurrency)
    warmup_s: float
    concurrencies: tuple[int, ...]
    stream_concurrency: int
    open_streams: tuple[int, ...]
    open_deadline_s: float  # longest wait for all streams of one count to be open
    soak_s: float
    soak_sample_s: float
    ceiling_concurrencies: tuple[int, ...]

    @classmethod
    def full(cls) -> Plan:
        return cls(False, 15.0, 2.0, (1, 32, 256), 32, (1000, 5000), 150.0, 300.0, 5.0, (32, 256))

    @classmethod
    def quick_look(cls) -> Plan:
        return cls(True, 3.0, 1.0, (1, 32), 32, (1000,), 15.0, 15.0, 1.0, (32,))

    def to_json(self) -> dict[str, object]:
        return attrs.asdict(self)


@attrs.define
class Run:
    """What every section needs: the plan, where to write scratch files, the machine,
    the pinning, and a clock for progress lines."""

    plan: Plan
    work: Path
    machine: Machine
    pinning: Pinning
    started: float = attrs.field(factory=time.monotonic)

    def say(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)
