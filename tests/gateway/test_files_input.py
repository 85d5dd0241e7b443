"""Files: every bad upload gets its clear 4xx and leaves nothing in the blob store; listing,
filters, metadata, and workspace isolation."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest
import trio

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.test_keys_api import as_client, foreign_key

from . import documents
from .test_files_api import processed, upload


def assert_nothing_stored(gateway: RunningGateway) -> None:
    assert gateway.state.files.blobs.stored() == []


@pytest.mark.parametrize(
    ("name", "data", "fields", "status", "code"),
    [
        pytest.param("empty.txt", b"", {}, 400, "invalid_request", id="empty file"),
        pytest.param(
            "report.pdf",
            os.urandom(64) + b"\x00" * 64,
            {},
            415,
            "unsupported_file_type",
            id="wrong magic bytes",
        ),
        pytest.param(
            "cut.pdf",
            documents.pdf_with_text(["cut short"])[:400],
            {},
            400,
            "invalid_file",
            id="truncated pdf",
        ),
        pytest.param(
            "bomb.docx", documents.zip_bomb_docx(), {}, 400, "invalid_file", id="zip bomb docx"
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"metadata": "{not json"},
            400,
            "invalid_request",
            id="metadata not json",
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"metadata": "[1, 2]"},
            400,
            "invalid_request",
            id="metadata not an object",
        ),
        pytest.param(
            "a.txt", b"text", {"purpose": "evals"}, 400, "invalid_request", id="unknown purpose"
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"service": '{"chunk_size": 64, "chunk_overlap": 64}'},
            400,
            "invalid_chunking",
            id="overlap not below size",
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"classification": "secret"},
            400,
            "invalid_request",
            id="unknown classification",
        ),
        pytest.param(
            "a.pdf",
            documents.pdf_with_text(["not audio"]),
            {"purpose": "audio"},
            400,
            "invalid_file_type",
            id="a pdf as audio",
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"service[vectorize]": "true", "service[embedding_model]": "no-such-model"},
            422,
            "invalid_model",
            id="unknown embedding model",
        ),
        pytest.param(
            "a.txt",
            b"text",
            {"service[embedding_model]": "gpt-4o-mini"},
            422,
            "invalid_model",
            id="chat model as embedding model",
        ),
        pytest.param(
            "a.png",
            documents.text_image(["scan"]),
            {"service[ocr_model]": "text-embedding-3-small"},
            422,
            "invalid_model",
            id="not an ocr model",
        ),
        pytest.param(
            "a.txt",
            b"\xff\xfe\x00\x01" * 8,
            {},
            415,
            "unsupported_file_type",
            id="binary named txt",
        ),
    ],
)
async def test_bad_uploads_are_refused_and_leave_nothing(
    http: httpx.AsyncClient,
    gateway: RunningGateway,
    name: str,
    data: bytes,
    fields: dict[str, str],
    status: int,
    code: str,
) -> None:
    fields = {"purpose": "document", **fields}
    purpose = fields.pop("purpose")
    answer = await upload(http, name, data, purpose=purpose, **fields)
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code
    assert answer.json()["error"]["message"]
    assert_nothing_stored(gateway)


async def test_a_container_format_without_its_extension_is_told_by_its_media_type(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    """DOCX and XLSX are both ZIP, a .doc is OLE: with no telling extension the part's
    declared Content-Type decides (it was a 415); without either it stays a 415."""
    made = {
        "docx": documents.docx(["Told by its type."]),
        "xlsx": documents.xlsx([["told", 1]]),
        "doc": documents.word97(["Told by its type."]),
    }
    media = {
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "doc": "application/msword",
    }
    for kind, data in made.items():
        answer = await http.post(
            "/v1/files",
            files={"file": ("report", data, media[kind])},
            data={"purpose": "assistants"},
        )
        assert answer.status_code == 200, (kind, answer.text)
        content = await http.get(f"/v1/files/{answer.json()['id']}/content")
        assert content.headers["content-type"] == media[kind]
    unnamed = await http.post(
        "/v1/files",
        files={"file": ("report", made["docx"], "application/octet-stream")},
        data={"purpose": "assistants"},
    )
    assert unnamed.status_code == 415, unnamed.text


async def test_a_password_pdf_is_refused_as_such_and_an_owner_locked_one_is_read(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    locked = documents.encrypted_pdf(["Locked page"], user_password="open sesame")
    answer = await upload(http, "locked.pdf", locked)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_file"
    assert "password" in answer.json()["error"]["message"]  # was "corrupt: FileNotDecrypted..."
    assert_nothing_stored(gateway)
    readable = documents.encrypted_pdf(["Owner locked page"], user_password="")
    stored = await upload(http, "owner.pdf", readable, process="true")
    assert stored.status_code == 200, stored.text
    assert (await processed(http, stored.json()["id"]))["status"] == "processed"
    text = (await http.get(f"/v1/files/{stored.json()['id']}/text")).json()["text"]
    assert text == "Owner locked page"


async def test_a_missing_file_is_400_and_a_body_that_is_not_multipart_415(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    """The spec's upload row: 415 unsupported media type, as transcriptions answer a
    body of another media type (it was a 400); a multipart body without its boundary is
    malformed, a 400."""
    answer = await http.post("/v1/files", data={"purpose": "document"}, files={"x": ("a", b"")})
    assert answer.status_code == 400
    assert "'file' is required" in answer.json()["error"]["message"]
    for body in ({"json": {"purpose": "document"}}, {"data": {"purpose": "document"}}):
        answer = await http.post("/v1/files", **body)  # type: ignore[arg-type]
        assert answer.status_code == 415, answer.text
        assert answer.json()["error"]["code"] == "unsupported_media_type"
    bare = {"content-type": "multipart/form-data"}
    answer = await http.post("/v1/files", content=b"x", headers=bare)
    assert answer.status_code == 400
    assert_nothing_stored(gateway)


async def _post_until_answered(url: str, head: bytes, part: bytes, total: int) -> tuple[bytes, int]:
    """Send a multipart upload of `total` file bytes in 1 MiB pieces over a raw socket and
    stop as soon as the gateway answers; the answer's first line and the bytes sent."""
    parts = urlsplit(url)
    stream = await trio.open_tcp_stream(parts.hostname or "", parts.port or 80)
    sent = 0
    answer = bytearray()
    async with stream, trio.open_nursery() as nursery:

        async def send_all() -> None:
            nonlocal sent
            await stream.send_all(head + part)
            piece = b"x" * (1024 * 1024)
            try:
                while sent < total:
                    await stream.send_all(piece)
                    sent += len(piece)
            except trio.BrokenResourceError:
                pass

        nursery.start_soon(send_all)
        while b"\r\n" not in answer:
            data = await stream.receive_some()
            if not data:
                break
            answer.extend(data)
        nursery.cancel_scope.cancel()
    return bytes(answer.split(b"\r\n", 1)[0]), sent


async def test_an_oversize_upload_is_refused_before_its_body_is_read(
    gateway: RunningGateway,
) -> None:
    total = 200 * 1024 * 1024  # audio allows 25 MB
    boundary = "b0undary"
    part = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\naudio\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    head = (
        "POST /v1/files HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(part) + total + 100}\r\n\r\n"
    ).encode()
    with trio.fail_after(60):
        status_line, sent = await _post_until_answered(gateway.url, head, part, total)
    assert status_line.split()[1] == b"413", status_line
    assert sent < total // 2
    assert_nothing_stored(gateway)


async def test_a_declared_length_beyond_every_limit_is_refused_at_once(
    gateway: RunningGateway,
) -> None:
    head = (
        "POST /v1/files HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\n"
        "Content-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {3 * 1024**3}\r\n\r\n"
    ).encode()
    with trio.fail_after(30):
        status_line, _ = await _post_until_answered(gateway.url, head, b"--x\r\n", 0)
    assert status_line.split()[1] == b"413", status_line
    assert_nothing_stored(gateway)


async def test_list_filters_pages_and_cursor(http: httpx.AsyncClient) -> None:
    ids = []
    for index in range(5):
        answer = await upload(
            http,
            f"f{index}.txt",
            f"file {index}".encode(),
            purpose="assistants" if index % 2 else "document",
            metadata=json.dumps({"team": "red" if index < 3 else "blue", "n": index}),
        )
        ids.append(answer.json()["id"])
    page = (await http.get("/v1/files", params={"limit": 2, "order": "asc"})).json()
    assert [f["id"] for f in page["data"]] == ids[:2]
    assert page["has_more"] is True
    assert (page["first_id"], page["last_id"]) == (ids[0], ids[1])
    rest = (
        await http.get("/v1/files", params={"limit": 10, "order": "asc", "after": ids[1]})
    ).json()
    assert [f["id"] for f in rest["data"]] == ids[2:]
    assert rest["has_more"] is False
    newest = (await http.get("/v1/files")).json()
    assert [f["id"] for f in newest["data"]] == ids[::-1]
    red_docs = (
        await http.get("/v1/files", params={"metadata.team": "red", "purpose": "document"})
    ).json()
    assert sorted(f["id"] for f in red_docs["data"]) == sorted([ids[0], ids[2]])
    # A number or boolean in the metadata matches its text in the query string.
    numbered = (await http.get("/v1/files", params={"metadata.n": "3"})).json()
    assert [f["id"] for f in numbered["data"]] == [ids[3]]
    flagged = await upload(http, "flag.txt", b"flag", metadata='{"ok": true, "r": 2.5}')
    for query in ({"metadata.ok": "true"}, {"metadata.r": "2.5"}):
        found = (await http.get("/v1/files", params=query)).json()
        assert [f["id"] for f in found["data"]] == [flagged.json()["id"]], query
    assert (await http.get("/v1/files", params={"metadata.ok": "1"})).json()["data"] == []
    for bad in (
        {"limit": "0"},
        {"limit": "101"},
        {"order": "up"},
        {"status": "done"},
        {"include": "everything"},
    ):
        answer = await http.get("/v1/files", params=bad)
        assert answer.status_code == 400, bad
    # A cursor naming no file is a refusal of what it names, not of the query's shape.
    unknown = await http.get("/v1/files", params={"after": "file-nope"})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "file_not_found"
    assert unknown.json()["error"]["param"] == "after"


async def test_patch_replaces_metadata(http: httpx.AsyncClient) -> None:
    file_id = (await upload(http, "a.txt", b"text", metadata='{"a": "1"}')).json()["id"]
    answer = await http.patch(f"/v1/files/{file_id}", json={"metadata": {"b": "2"}})
    assert answer.json() == {
        "id": file_id,
        "object": "file",
        "filename": "a.txt",
        "metadata": {"b": "2"},
    }
    assert (await http.get(f"/v1/files/{file_id}")).json()["metadata"] == {"b": "2"}
    bad = await http.patch(f"/v1/files/{file_id}", json={"metadata": "x"})
    assert bad.status_code == 400


async def test_another_workspace_sees_a_file_as_unknown(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    file_id = (await upload(http, "a.txt", b"private")).json()["id"]
    other = await foreign_key(gateway, "admin", ("files",))
    async with as_client(gateway, other) as as_other:
        unknown = await as_other.get("/v1/files/file-000000000000000000000000")
        for path in ("", "/content", "/status", "/text", "/chunks", "/pii"):
            answer = await as_other.get(f"/v1/files/{file_id}{path}")
            assert answer.status_code == 404
            assert answer.json() == {
                "error": {**unknown.json()["error"], "message": f"No file '{file_id}'."}
            }
        assert (await as_other.delete(f"/v1/files/{file_id}")).status_code == 404
        assert (await as_other.get("/v1/files")).json()["data"] == []
    assert (await http.get(f"/v1/files/{file_id}/content")).content == b"private"


async def test_two_files_with_the_same_bytes_share_a_blob_until_both_are_deleted(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    first = (await upload(http, "a.txt", b"same bytes")).json()["id"]
    second = (await upload(http, "b.txt", b"same bytes")).json()["id"]
    assert len(gateway.state.files.blobs.stored()) == 1
    await http.delete(f"/v1/files/{first}")
    assert (await http.get(f"/v1/files/{second}/content")).content == b"same bytes"
    await http.delete(f"/v1/files/{second}")
    assert_nothing_stored(gateway)


async def until(condition: Callable[[], bool]) -> None:
    """Poll the filesystem (it has no event to wait on) until `condition` holds."""
    while True:
        if condition():
            return
        await trio.sleep(0.01)


async def test_a_client_gone_mid_upload_leaves_nothing(gateway: RunningGateway) -> None:
    boundary = "g0ne"
    part = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\ndocument\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + b"partial text " * 10_000
    head = (
        "POST /v1/files HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(part) + 1_000_000}\r\n\r\n"
    ).encode()
    parts = urlsplit(gateway.url)
    blobs = gateway.state.files.blobs
    with trio.fail_after(30):
        async with await trio.open_tcp_stream(parts.hostname or "", parts.port or 80) as stream:
            await stream.send_all(head + part)
            await until(lambda: bool(blobs.stored()))  # the temporary blob is being written
        await until(lambda: not blobs.stored())  # the disconnect cancelled it and removed it
    assert (
        await gateway.state.db.run(lambda d: d.execute("SELECT count(*) FROM files").fetchone())
    )[0] == 0
