"""`gateway serve` caps glibc's malloc arenas before any thread starts
(`gateway.app.memory`): threads that allocate share the main arena instead of keeping
one of their own resident for the life of the process. Counted from glibc's own
report (`malloc_info`: one `<heap>` per arena), in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.glibc_arenas import ARENAS

ROOT = Path(__file__).resolve().parents[2]

# Four threads that call malloc at once (zlib allocates its state outside the
# interpreter's lock), then glibc's count of arenas.
PROGRAM = (
    ARENAS
    + """
import os, sys, threading, zlib
from gateway.app.memory import limit_malloc_arenas
capped = limit_malloc_arenas() if sys.argv[1] == "cap" else None
data = os.urandom(1 << 20)
def work(): [zlib.compress(data) for _ in range(20)]
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(capped, arenas())
"""
)


def _arenas(mode: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_threads_that_allocate_share_the_main_arena_once_capped() -> None:
    capped, arenas = _arenas("cap")
    assert (capped, arenas) == ("True", 1)
    _, uncapped = _arenas("leave")
    assert uncapped > 1  # what the cap takes away: an arena per allocating thread
