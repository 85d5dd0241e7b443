"""Where the CPU of a load point went: per process, per request, and the machine's idle.

Section 7 asks why two workers do not give twice one worker's requests/s on a machine
whose two cores they share with the simulator, Redis and `wrk`. A point's latency moves
with the machine's load, but the CPU each process spends per request does not (much), and
neither does the idle share: idle CPU during a saturated point means something waits
(locks, round trips), no idle CPU means the ratio is bounded by the work per request.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from bench.procs import children, cpu_seconds


def machine_jiffies() -> tuple[int, int, int]:
    """(all, idle + iowait, steal) jiffies of every core so far, from /proc/stat. Steal
    is the time the hypervisor gave this VM's cores to others: on a shared host it moves
    from second to second, and every process's CPU per request rises with it."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[3] + fields[4], fields[7]


def _self_children_cpu_s() -> float:
    """CPU of this process's waited-for children (the `wrk` runs, once each ends)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@attrs.define
class CpuShare:
    """CPU seconds of named processes (and a supervisor's children, one by one), `wrk`
    and the machine, between `start()` and `figures(requests)`."""

    processes: Mapping[str, int]  # name -> pid
    supervisor: int | None = None  # its children are counted one by one, `worker <pid>`
    _before: dict[str, float] = attrs.field(factory=dict, init=False)
    _machine: tuple[int, int, int] = attrs.field(default=(0, 0, 0), init=False)

    def _now(self) -> dict[str, float]:
        found: dict[str, float] = {}
        for name, pid in self.processes.items():
            found[name] = _cpu_or_zero(pid)
        if self.supervisor is not None:
            for pid in children(self.supervisor):
                found[f"worker {pid}"] = _cpu_or_zero(pid)
        found["wrk"] = _self_children_cpu_s()
        return found

    def start(self) -> None:
        self._before = self._now()
        self._machine = machine_jiffies()

    def figures(self, requests: int) -> dict[str, Any]:
        """CPU-ms per request of each process (workers by pid), the total, and the
        machine's idle and stolen shares over the point."""
        after = self._now()
        per_request = {
            name: round((spent - self._before.get(name, 0.0)) * 1000 / max(requests, 1), 3)
            for name, spent in after.items()
        }
        total, idle, steal = machine_jiffies()
        spent_total = max(total - self._machine[0], 1)
        return {
            "cpu_ms_per_request": per_request,
            "cpu_ms_per_request_total": round(sum(per_request.values()), 3),
            "machine_idle_share": round((idle - self._machine[1]) / spent_total, 3),
            "machine_steal_share": round((steal - self._machine[2]) / spent_total, 3),
            "cores": os.cpu_count(),
        }


def _cpu_or_zero(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except OSError:
        return 0.0
