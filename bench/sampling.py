"""Percentiles of timings, and a background sampler of RSS and open descriptors.

The sampler reads /proc in a thread while a load runs, so a run reports the peak
resident memory of each server under load, and the soak its whole memory curve.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Sequence
from types import TracebackType

import attrs

from bench.procs import Proc


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank) of `values`; NaN when there are none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def percentiles_ms(values_s: Sequence[float], points: Sequence[float]) -> dict[str, float]:
    """Percentiles of timings given in seconds, as milliseconds keyed like `wrk`'s."""
    return {_key(p): round(percentile(values_s, p) * 1000, 3) for p in points}


def _key(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else str(p)


@attrs.frozen
class Sample:
    at_s: float
    rss_mib: float
    fds: int
    own_rss_mib: float = math.nan  # the process alone, its children left out


class Sampler:
    """Samples each process every `every_s` seconds while the block runs."""

    def __init__(self, procs: Sequence[Proc], every_s: float = 0.5) -> None:
        self.procs = list(procs)
        self.every_s = every_s
        self.samples: dict[str, list[Sample]] = {p.name: [] for p in self.procs}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.monotonic()

    def __enter__(self) -> Sampler:
        self._t0 = time.monotonic()
        self.take()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.take()  # the state at the end of the block is always included

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.take()

    def take(self) -> None:
        at = time.monotonic() - self._t0
        for proc in self.procs:
            # A process that has exited keeps its last samples.
            with contextlib.suppress(OSError):
                self.samples[proc.name].append(
                    Sample(at, proc.rss_mib(), proc.open_fds(), proc.own_rss_mib())
                )

    def peak_rss(self, name: str) -> float:
        return max((s.rss_mib for s in self.samples[name]), default=math.nan)

    def peak_own_rss(self, name: str) -> float:
        """The process's own peak, its children left out."""
        return max((s.own_rss_mib for s in self.samples[name]), default=math.nan)
