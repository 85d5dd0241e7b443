"""PII scans run in a worker process, never in a thread of the gateway's own.

The scan (`gateway.kernels.pii.detector`: Presidio's recognizers and spaCy's name model) is Python
work: about 5,000-8,000 characters a second here, and about 3 s of imports and model
loading before the first one. In a thread it holds the interpreter lock that the event
loop needs, so every request in flight beside a scan waited for its turns (the first
file after a start held the loop for seconds). In a process of its own the loop never
waits for it.

The process comes from trio-parallel's worker cache: spawned at the first scan, kept
while scans keep coming (so the model loads once per worker, not once per scan), retired
after `idle_timeout` without one, and stopped when the gateway exits. A scan that is
cancelled (its file deleted, the gateway shutting down) kills its worker rather than
waiting for the scan to finish; the next scan spawns a fresh one.

trio-parallel, like the scan's own packages, belongs to the `[files]` extra: it is
imported with the first scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import trio

Result = TypeVar("Result")


async def run_scan(
    scan: Callable[..., Result], *args: object, limiter: trio.CapacityLimiter
) -> Result:
    """`scan(*args)` in a worker process. `scan` and its arguments cross a pipe, so they
    must pickle: module-level functions and attrs records do. `limiter` bounds how many
    worker processes (each with its own copy of the model) scan at once."""
    import trio_parallel

    result: Result = await trio_parallel.run_sync(scan, *args, kill_on_cancel=True, limiter=limiter)
    return result
