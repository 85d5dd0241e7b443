"""The core imports none of the extras' packages: they load with the families that use
them (a fresh interpreter each, since the test process has imported everything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway.platform.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
# Every module of every extra, and the heavy packages they bring with them.
HEAVY = sorted(
    {module for extra in EXTRAS for module in extra.modules}
    | {"ctranslate2", "onnxruntime", "spacy", "thinc", "tokenizers", "pandas", "psycopg_binary"}
)


def _loaded_after(code: str) -> list[str]:
    """The `HEAVY` modules loaded once `code` ran in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_importing_the_gateway_and_every_family_loads_no_package_of_an_extra() -> None:
    # gateway.app.server imports the registry, hence every family's routes and services.
    assert _loaded_after("import gateway.app.cli, gateway.app.server, providers.sim.server") == []


def test_the_store_imports_sqlite_utils_without_numpy_which_stays_importable() -> None:
    code = (
        "import store, sqlite_utils, sqlite_utils.db\n"
        "assert sqlite_utils.db.np is None and sqlite_utils.db.pd is None"
    )
    assert _loaded_after(code) == []
    # numpy hidden only while sqlite-utils was imported: a family that needs it gets it
    assert "numpy" in _loaded_after("import store, sqlite_utils, numpy")


def test_the_docs_renderer_and_the_tokenizer_load_on_first_use() -> None:
    """markdown-it (the served docs pages) and tiktoken (embedding inputs sent as token
    ids; file chunking) are not on the chat hot path: ~2.4 MiB of the gateway's resident
    memory that a gateway not asked for them never loads (issue 37)."""
    probe = (
        "import gateway.app.cli, gateway.app.server, sys\n"
        "print(sorted(m for m in ('markdown_it', 'tiktoken') if m in sys.modules))\n"
        "from gateway.operator import pages\n"
        "from providers import tokenizers\n"
        "pages.render('# Title', set()); tokenizers.decode([9906])\n"
        "print(sorted(m for m in ('markdown_it', 'tiktoken') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["[]", "['markdown_it', 'tiktoken']"]


def test_the_usage_writer_child_imports_only_what_it_writes_with() -> None:
    """The child (`gateway.workers.usage_child`) writes batches with sqlite3, orjson and
    the store's batch code. OpenSSL's libcrypto (through `secrets`, hmac and hashlib: 3.4
    MiB resident) and importlib's resources (tempfile, shutil, bz2, lzma: ~1 MiB) were
    loaded there for nothing; the server's packages never were (issue 37)."""
    unwanted = (
        "_hashlib",
        "importlib.resources",
        "tempfile",
        "sqlite_utils",
        "trio",
        "quart",
        "httpcore",
        "gateway.platform",
    )
    probe = (
        "import gateway.workers.usage_child, sys\n"
        f"print(sorted(m for m in {unwanted!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


# The families an extra gates, and what of them the core keeps (their blob runtimes: the
# organisation's erasure and the store's sync reach files and documents without them).
GATED = ("audio", "pipelines", "realtime", "files", "documents", "ocr")
KEPT = ("gateway.files", "gateway.files.runtime", "gateway.documents", "gateway.documents.runtime")

_CORE_GATEWAY = """
import json, sys, tempfile
from functools import partial
from pathlib import Path
from gateway.platform.extras import EXTRAS
for extra in EXTRAS:  # a core install: no extra's package is importable
    for module in extra.modules:
        sys.modules[module] = None
import trio
from gateway.app.server import run_gateway
from gateway.platform.config import Settings

async def main(data: Path) -> None:
    settings = Settings(host="127.0.0.1", port=0, data_dir=data, usage_writer="thread")
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(run_gateway, settings, env={}))
        print(json.dumps(sorted(sys.modules)))
        nursery.cancel_scope.cancel()

with tempfile.TemporaryDirectory() as data:
    trio.run(main, Path(data))
"""


def test_a_core_gateway_loads_no_code_of_the_families_it_does_not_mount() -> None:
    """A core install mounts none of the families the extras gate, and serves without
    their ~110 modules (~6 MiB resident); nor does a gateway outside `--demo` load the
    simulators (issue 37)."""
    done = subprocess.run(
        [sys.executable, "-c", _CORE_GATEWAY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "gateway.app.server" in loaded and "gateway.chat.service" in loaded
    gated = sorted(
        m for m in loaded for family in GATED if m.startswith(f"gateway.{family}") and m not in KEPT
    )
    assert gated == []
    assert "gateway.app.gated" not in loaded
    assert not [m for m in loaded if m.startswith("providers.sim")]
