"""The PII scan's worker process: the scan runs outside the gateway's process (so its
Python work never holds the event loop's interpreter lock), and a cancelled scan ends at
once instead of running to its end."""

from __future__ import annotations

import os
import time

import trio

from gateway.kernels.pii import detector as pii
from gateway.kernels.pii import worker as pii_worker
from store.files import Page


async def test_a_scan_runs_in_another_process_and_finds_what_the_scan_finds() -> None:
    limiter = trio.CapacityLimiter(1)
    assert await pii_worker.run_scan(os.getpid, limiter=limiter) != os.getpid()
    pages = [Page(1, "Write to ada@example.com."), Page(2, "Patient: Ada Lovelace")]
    found = await pii_worker.run_scan(pii.scan, pages, "\n\n", limiter=limiter)
    assert found == pii.scan(pages, "\n\n")
    assert {f.type for f in found} == {"email", "person_name"}


async def test_a_cancelled_scan_ends_at_once_and_the_next_one_runs() -> None:
    limiter = trio.CapacityLimiter(1)
    with trio.fail_after(30):  # a hang guard, not a speed check
        with trio.move_on_after(0.5) as waited:
            await pii_worker.run_scan(time.sleep, 600, limiter=limiter)
        assert waited.cancelled_caught
        assert await pii_worker.run_scan(os.getpid, limiter=limiter) != os.getpid()
