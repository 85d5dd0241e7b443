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
