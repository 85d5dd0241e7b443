"""The password decoy (`gateway.organization.secrets`): an unknown email is verified
against a hash of the same cost as a user's, and making it costs the gateway nothing at
start. Hashing it at import ran a 64 MiB, four-lane Argon2 at every start, whose threads
left glibc arenas resident (bench/README.md, session 7's memory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from gateway.organization import secrets
from tests.gateway.glibc_arenas import ARENAS

ROOT = Path(__file__).resolve().parents[2]

# The import, then glibc's count of arenas (one `<heap>` each) and how far the process's
# peak resident memory rose over it.
PROGRAM = (
    ARENAS
    + """
def peak_kib():
    return int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")))
before = peak_kib()
import gateway.organization.secrets
print(arenas(), peak_kib() - before)
"""
)


def test_the_decoy_costs_what_a_users_hash_costs() -> None:
    hasher = PasswordHasher()
    assert not hasher.check_needs_rehash(secrets._DECOY)  # the same memory, passes, lanes
    assert secrets.verify_password(None, "decoy password, never a user's") is False
    stored = secrets.hash_password("a real one")
    assert secrets.verify_password(stored, "a real one") is True
    assert secrets.verify_password(stored, "another") is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_importing_the_module_hashes_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(ROOT)
    arenas, peak_rise_kib = map(
        int,
        subprocess.run(
            [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True
        ).stdout.split(),
    )
    assert arenas == 1  # no thread allocated: Argon2's lanes are threads
    assert peak_rise_kib < 32 * 1024  # an Argon2 hash touches its 64 MiB
