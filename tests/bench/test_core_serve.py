"""`bench.core_serve` runs the gateway as a core install would: every extra missing, so
the families they gate are not mounted (issue 37's memory target is on that install)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_extra_is_missing_and_its_packages_unimportable() -> None:
    probe = (
        "import json, sys\n"
        "from bench.core_serve import block_extras\n"
        "blocked = block_extras()\n"
        "from gateway.platform.extras import EXTRAS, missing\n"
        "try:\n"
        "    import numpy\n"
        "    imported = True\n"
        "except ImportError:\n"
        "    imported = False\n"
        "print(json.dumps([[e.name for e in missing(EXTRAS)], 'numpy' in blocked, imported]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    names, numpy_blocked, numpy_imported = json.loads(done.stdout.splitlines()[-1])
    assert names == ["audio", "files", "exports", "postgres"]
    assert numpy_blocked and not numpy_imported
