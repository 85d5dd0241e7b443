"""A family whose extra is missing is not mounted: its routes answer 501 naming the extra,
`/v1/models` leaves its models out, the banner says so, and the core serves as before.

Each test blocks one module of an extra (`block`), so the registry finds the extra
missing, and starts a whole demo gateway; the official `openai` client and plain HTTP
(and a WebSocket client for the voice routes) talk to it over a real socket.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from gateway.app.cli import banner
from tests.gateway import documents
from tests.gateway.conftest import ADMIN_KEY
from tests.install.conftest import Block, clients, start

AUDIO_INSTALL = "pip install 'ai-gateway[audio]'"


def assert_not_installed(response: httpx.Response, extra: str) -> None:
    assert response.status_code == 501, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == ("feature_not_installed", "server_error")
    assert error["extras"] == [extra]
    assert error["install"] == f"pip install 'ai-gateway[{extra}]'"
    assert error["install"] in error["message"]
    assert error["doc_url"].endswith("/docs/pages/errors#feature_not_installed")


def refused_handshake(url: str) -> tuple[int, Any]:
    """The HTTP answer to a WebSocket handshake at `url` (the admin key in the header)."""
    try:
        with connect(url, additional_headers={"Authorization": f"Bearer {ADMIN_KEY}"}):
            pass
    except InvalidStatus as refused:
        return refused.response.status_code, json.loads(refused.response.body or b"null")
    raise AssertionError(f"{url} accepted the handshake")


async def model_ids(http: httpx.AsyncClient) -> dict[str, list[str]]:
    listed = (await http.get("/v1/models")).json()["data"]
    return {m["id"]: m["service"]["capabilities"] for m in listed}


async def test_without_the_audio_extra_its_families_answer_501_and_chat_is_served(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    block("av")
    gateway = await start(nursery, tmp_path)
    async with clients(gateway) as (sdk, http):
        answer = await sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
        )
        assert answer.choices[0].message.content
        with pytest.raises(openai.InternalServerError) as speech:
            await sdk.audio.speech.create(model="tts-1", voice="alloy", input="Hello")
        assert_not_installed(speech.value.response, "audio")
        with pytest.raises(openai.InternalServerError) as heard:
            await sdk.audio.transcriptions.create(
                model="whisper-1", file=("hello.wav", documents.wav())
            )
        assert_not_installed(heard.value.response, "audio")
        for method, path in (
            ("GET", "/v1/audio/voices"),
            ("GET", "/v1/audio/voices/alloy/preview"),
            ("POST", "/v1/audio/translations"),
            ("DELETE", "/v1/management/voice-mappings/vm_1"),
            ("POST", "/v1/audio/pipelines"),
            ("GET", "/v1/management/pipeline-templates"),
        ):
            assert_not_installed(await http.request(method, path), "audio")
        unauthenticated = await http.post("/v1/audio/speech", headers={"authorization": ""})
        assert unauthenticated.status_code == 401
        assert unauthenticated.json()["error"]["code"] == "invalid_api_key"
        listed = await model_ids(http)
        assert "gpt-4o-mini" in listed and "text-embedding-3-small" in listed
        absent = {"speech", "transcription", "realtime"}
        assert not [m for m, capabilities in listed.items() if absent & set(capabilities)]
        assert (await http.get("/v1/models/tts-1")).status_code == 404
    ws = gateway.url.replace("http://", "ws://")
    for path in ("/v1/realtime?model=gpt-realtime", "/v1/audio/sessions"):
        status, body = await trio.to_thread.run_sync(refused_handshake, ws + path)
        assert status == 501 and body["error"]["install"] == AUDIO_INSTALL


async def test_without_the_files_extra_files_documents_and_ocr_answer_501(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    block("pypdf")
    gateway = await start(nursery, tmp_path)
    async with clients(gateway) as (sdk, http):
        with pytest.raises(openai.InternalServerError) as uploaded:
            await sdk.files.create(file=("notes.md", b"# Notes"), purpose="assistants")
        assert_not_installed(uploaded.value.response, "files")
        for method, path in (
            ("GET", "/v1/files"),
            ("GET", "/v1/files/file_1/text"),
            ("POST", "/v1/data/documents"),
            ("POST", "/v1/data/search"),
            ("POST", "/v1/ocr"),
        ):
            assert_not_installed(await http.request(method, path), "files")
        listed = await model_ids(http)
        assert "mistral-ocr-latest" not in listed and "tts-1" in listed
        embedded = await sdk.embeddings.create(model="text-embedding-3-small", input="Hello")
        assert len(embedded.data[0].embedding) == 1536


async def test_the_banner_names_what_is_not_installed_and_the_command(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    block("faster_whisper", "tesserocr")
    text = banner(await start(nursery, tmp_path))
    assert "not installed: audio, pipelines, realtime (pip install 'ai-gateway[audio]')" in text
    assert "not installed: documents, files, ocr (pip install 'ai-gateway[files]')" in text
    families = next(line for line in text.splitlines() if line.startswith("families: "))
    assert {"chat", "retrieval", "analytics"} <= set(families[10:].split(", "))
    assert "audio" not in families and "files" not in families


async def test_everything_installed_the_banner_lists_every_family_and_nothing_off(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    text = banner(await start(nursery, tmp_path))
    assert "not installed" not in text
    families = next(line for line in text.splitlines() if line.startswith("families: "))
    assert {"audio", "pipelines", "realtime", "files", "documents", "ocr"} <= set(
        families[10:].split(", ")
    )


async def test_a_parquet_export_without_the_exports_extra_is_501_and_csv_still_works(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    block("pyarrow")
    gateway = await start(nursery, tmp_path)
    today = date.today()
    period = {"start_date": str(today - timedelta(days=7)), "end_date": str(today)}
    async with clients(gateway) as (_, http):
        parquet = await http.post(
            "/v1/management/analytics/export", json={**period, "format": "parquet"}
        )
        assert_not_installed(parquet, "exports")
        csv = await http.post("/v1/management/analytics/export", json={**period, "format": "csv"})
        assert csv.status_code == 202, csv.text


async def test_the_scribe_template_without_the_files_extra_is_501(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    """The pipelines are mounted with `[audio]`; the scribe's PII detection is `[files]`'s."""
    block("presidio_analyzer")
    gateway = await start(nursery, tmp_path)
    async with clients(gateway) as (_, http):
        answer = await http.post(
            "/v1/audio/pipelines",
            files={"audio": ("visit.wav", documents.wav(), "audio/wav")},
            data={"template": "ambient-scribe"},
        )
        assert_not_installed(answer, "files")


async def test_an_audio_upload_to_transcribe_without_the_audio_extra_is_501(
    nursery: trio.Nursery, tmp_path: Path, block: Block
) -> None:
    """Files are mounted with `[files]`; transcribing an audio file needs `[audio]` too,
    said at upload rather than by a failed file later. Without transcription the audio
    file is stored."""
    block("webrtcvad")
    gateway = await start(nursery, tmp_path)
    async with clients(gateway) as (_, http):
        form = {"file": ("call.wav", documents.wav())}
        wanted = await http.post(
            "/v1/files", files=form, data={"purpose": "audio", "auto_transcribe": "true"}
        )
        assert_not_installed(wanted, "audio")
        stored = await http.post("/v1/files", files=form, data={"purpose": "audio"})
        assert stored.status_code == 200, stored.text
        listed = (await http.get("/v1/files")).json()["data"]
        assert [f["filename"] for f in listed] == ["call.wav"]
