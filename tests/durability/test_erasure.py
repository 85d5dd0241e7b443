"""Erasure leaves no copy of the content anywhere under the data directory, across a restart.

A file (processed: extracted text, chunks, vectors, PII findings) and a data document both
carry a canary string, the file a PII canary too. They are deleted through the API, the
gateway is stopped and started again on the same data directory, and then every file under
it (database, WAL, shared memory, blobs, exports, temporary files) is read as bytes: neither
canary, nor the masked form the PII report stores, may be in any of them. The scan is
shown to see the canaries while the content exists, so a scan that reads nothing cannot
pass. Deleting a workspace erases what it held the same way.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlite_utils
import trio

from gateway.app.server import run_gateway
from gateway.app.state import AppState
from gateway.kernels.pii.detector import mask
from gateway.platform.config import Settings
from store import documents as document_store
from store import erasure
from store import files as file_store
from store.erasure import Removal
from tests.gateway.conftest import ADMIN_KEY

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FILE_CANARY = "qwvzcanary5150jkxt"
DOCUMENT_CANARY = "plofcanary8823mnbv"
PII_CANARY = "mirelda.quonstrap@example.org"
TEXT = (
    "Quarterly notes on the account. Reference %s appears once.\n\n"
    "Write to %s about the renewal before the end of the month.\n"
)


def needles(*canaries: str) -> list[bytes]:
    """A canary, its tail (an index may store a term after a prefix it shares) and, for the
    PII canary, the masked form the PII report stores."""
    return [n.encode() for c in canaries for n in (c, c[-9:], mask(c))]


EVERY_NEEDLE = needles(FILE_CANARY, DOCUMENT_CANARY, PII_CANARY)
FILE_OPTIONS = {"process": True, "vectorize": True, "detect_pii": True}

PROVIDERS = "/v1/management/providers"

Step = Callable[[httpx.AsyncClient], Awaitable[None]]


async def serve_once(settings: Settings, then: Step, states: list[AppState] | None = None) -> None:
    """Start a gateway on the settings' data directory, run `then(http)`, stop it (its
    state goes into `states` for a test that reaches past the API)."""
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        running = await nursery.start(
            partial(run_gateway, settings, env={}, shutdown_trigger=stop.wait)
        )
        if states is not None:
            states.append(running.state)
        headers = {"authorization": f"Bearer {ADMIN_KEY}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers, timeout=30) as http:
            await then(http)
        stop.set()


def found_under(data_dir: Path, wanted: list[bytes] = EVERY_NEEDLE) -> list[str]:
    """Every file under the data directory holding one of `wanted`, as `path: needle`."""
    hits = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        content = path.read_bytes()
        hits += [f"{path.relative_to(data_dir)}: {n!r}" for n in wanted if n in content]
    return hits


async def until(
    http: httpx.AsyncClient, path: str, done: set[str], headers: dict[str, str]
) -> dict[str, Any]:
    """Poll `path` (as a client would) until its status is one of `done`."""
    with trio.fail_after(60):
        while True:
            body: dict[str, Any] = (await http.get(path, headers=headers)).json()
            if body["status"] in done:
                return body
            await trio.sleep(0.05)


async def fill(http: httpx.AsyncClient, **headers: str) -> tuple[str, str]:
    """A processed file and a processed data document holding the canaries: their ids."""
    made = await http.post(
        "/v1/files",
        files={"file": ("notes.txt", (TEXT % (FILE_CANARY, PII_CANARY)).encode())},
        data={"purpose": "document", "service": json.dumps(FILE_OPTIONS)},
        headers=headers,
    )
    assert made.status_code == 200, made.text
    file_id = made.json()["id"]
    content = (TEXT % (DOCUMENT_CANARY, "the account manager")).encode()
    document = await http.post(
        "/v1/data/documents", files={"file": ("notes.md", content)}, headers=headers
    )
    assert document.status_code == 200, document.text
    document_id = document.json()["id"]
    status = await until(http, f"/v1/files/{file_id}/status", {"processed", "error"}, headers)
    assert status["status"] == "processed", status
    report = (await http.get(f"/v1/files/{file_id}/pii", headers=headers)).json()
    assert report["summary"] == {"email": 1}
    done = await until(http, f"/v1/data/documents/{document_id}", {"completed", "failed"}, headers)
    assert done["status"] == "completed", done
    return file_id, document_id


async def test_deleted_files_and_documents_leave_no_byte_behind(settings: Settings) -> None:
    data_dir = settings.data_dir

    async def delete_them(http: httpx.AsyncClient) -> None:
        file_id, document_id = await fill(http)
        # The scan sees each canary while its content exists.
        assert len(found_under(data_dir, needles(DOCUMENT_CANARY))) >= 2  # the row and blob
        assert len(found_under(data_dir, needles(FILE_CANARY, PII_CANARY))) >= 3
        assert (await http.delete(f"/v1/data/documents/{document_id}")).status_code == 200
        assert found_under(data_dir, needles(DOCUMENT_CANARY)) == []
        assert (await http.delete(f"/v1/files/{file_id}")).status_code == 200
        assert found_under(data_dir) == []
        assert (await http.get(f"/v1/files/{file_id}")).status_code == 404

    async def nothing(http: httpx.AsyncClient) -> None:
        assert (await http.get("/v1/files")).json()["data"] == []

    await serve_once(settings, delete_them)
    await serve_once(settings, nothing)
    assert found_under(data_dir) == []


async def test_a_deleted_workspace_leaves_no_byte_of_its_content_behind(
    settings: Settings,
) -> None:
    data_dir = settings.data_dir
    answers: dict[str, Any] = {}

    async def delete_workspace(http: httpx.AsyncClient) -> None:
        made = await http.post("/v1/management/workspaces", json={"name": "Short-lived"})
        assert made.status_code == 201, made.text
        workspace = made.json()["id"]
        there = {"x-workspace-id": workspace}
        key = await http.post(
            "/v1/management/api-keys", json={"name": "uploader", "type": "prod"}, headers=there
        )
        assert key.status_code == 201, key.text
        simulator = (await http.get(f"{PROVIDERS}/openai")).json()["settings"]["base_url"]
        configured = await http.post(
            PROVIDERS,
            json={
                "provider": "openai",
                "credentials": {"api_key": "sk-simulated"},
                "settings": {"base_url": simulator, "region": "eu"},
            },
            headers=there,
        )
        assert configured.status_code == 201, configured.text
        answers["ids"] = await fill(http, authorization=f"Bearer {key.json()['key']}")
        assert found_under(data_dir)
        # What a workspace must be rid of before it can go (409 workspace_not_empty).
        revoked = await http.post(
            f"/v1/management/api-keys/{key.json()['id']}/revoke", headers=there
        )
        assert revoked.status_code == 200, revoked.text
        removed = await http.delete(f"{PROVIDERS}/openai", headers=there)
        assert removed.status_code == 200, removed.text
        gone = await http.delete(f"/v1/management/workspaces/{workspace}")
        assert gone.status_code == 200, gone.text
        assert found_under(data_dir) == []

    async def nothing(http: httpx.AsyncClient) -> None:
        file_id, document_id = answers["ids"]
        assert (await http.get(f"/v1/files/{file_id}")).status_code == 404
        assert (await http.get(f"/v1/data/documents/{document_id}")).status_code == 404

    await serve_once(settings, delete_workspace)
    await serve_once(settings, nothing)
    assert found_under(data_dir) == []


async def test_an_erasure_cut_short_after_its_commit_is_finished_at_the_next_start(
    settings: Settings,
) -> None:
    """A crash between an erasure's commit and its cleanup leaves the blobs (and, killed,
    the WAL's old pages): the next start shreds blobs no row names and truncates the WAL."""
    data_dir = settings.data_dir

    async def commit_only(http: httpx.AsyncClient) -> None:
        file_id, document_id = await fill(http)
        state = running_state[0]

        def remove(db: sqlite_utils.Database) -> Removal[None]:
            file_store.delete(db, "default", file_id)
            document_store.remove(db, "default", document_id)
            return Removal(None)

        await state.db.run(partial(erasure.remove_rows, remove=remove))  # and no cleanup
        assert (await http.get(f"/v1/files/{file_id}")).status_code == 404
        assert found_under(data_dir)  # the blobs are still there

    async def restart(http: httpx.AsyncClient) -> None:
        assert (await http.get("/v1/files")).json()["data"] == []

    running_state: list[AppState] = []
    await serve_once(settings, commit_only, running_state)
    await serve_once(settings, restart)
    assert found_under(data_dir) == []
