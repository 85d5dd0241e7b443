"""The C allocator's share of a serving gateway's resident memory (issue 37: the core's
gateway process under load, at most 90 MiB).

glibc gives each thread that calls `malloc` while the main arena is busy an arena of its
own (up to eight per core), and never gives one back: a few pages of each stay resident
for the life of the process. The gateway's Python runs on one thread; what starts others
is start-up's Argon2 hashing (argon2-cffi's four lanes), trio's worker threads and the
resolver's. Their arenas held 1.3-1.5 MiB of the 90 (bench/README.md, "Memory of the
hot path's gateway"), for threads that mostly run while the gateway starts. One arena
(the main one) for every thread keeps that memory where the main thread's allocations
reuse it; the threads' `malloc` calls then share its lock. For the threads that run
Python that changes nothing (the interpreter's lock serialises them already); threads that
allocate outside it at the same time (the `[audio]` extra's local models and FFmpeg) may
wait on it: not measured, and an operator who runs them heavily can set
`MALLOC_ARENA_MAX` (for instance to 8) to lift the cap.

Linux with glibc only: elsewhere (musl, macOS) nothing is changed. An operator's
`MALLOC_ARENA_MAX` is glibc's own setting and wins.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

M_ARENA_MAX = -8  # mallopt's parameter number for the arena cap (glibc's malloc.h)
ARENAS = 1


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at `arenas` for threads started from now on; whether the
    cap was set (False off glibc, or when `MALLOC_ARENA_MAX` is set already). Call it
    before the gateway starts any thread."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = _glibc_mallopt()
    return mallopt is not None and mallopt(M_ARENA_MAX, arenas) == 1


def _glibc_mallopt() -> Callable[[int, int], int] | None:
    """glibc's `mallopt(int, int) -> int`, or None when the C library is another."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  # present in glibc only
    except (AttributeError, OSError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt
