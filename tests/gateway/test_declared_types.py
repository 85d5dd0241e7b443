"""An upload's type is judged by its bytes, and a client that declares another one (by the
file's name, or the part's Content-Type) hears so: a 400 naming the mismatch, on every
upload family (files, OCR, audio transcriptions and translations, data documents), with
nothing stored or charged (on the audio endpoints, bytes that are no audio at all stay the
400 `invalid_audio`, whatever they were called). A declaration that names no format
(`application/octet-stream`, an unknown extension, none) is no lie, and neither is a name
of the same family of formats (a CSV sent as `text/plain`, or as `application/vnd.ms-excel`
as Windows browsers do).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from tests.providers.wav import square_wave_wav

from . import documents

PNG = documents.text_image(["Invoice 4711"])
PDF = documents.pdf_with_text(["Invoice 4711 for the quarter."])
WAV = square_wave_wav(1.0)
WHISPER = {"model": "whisper-1"}


def refused(answer: httpx.Response, detected: str, declared: str) -> dict[str, Any]:
    assert answer.status_code == 400, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["code"] == "file_type_mismatch"
    assert error["type"] == "invalid_request_error" and error["param"] == "file"
    assert (error["detected_type"], error["declared_type"]) == (detected, declared)
    return error


MISMATCHES = [
    # path, form fields, (file name, bytes, Content-Type), detected, declared
    ("/v1/files", {"purpose": "assistants"}, ("scan.pdf", PNG, "application/pdf"), "png", "pdf"),
    ("/v1/files", {"purpose": "assistants"}, ("scan.pdf", PNG, None), "png", "pdf"),
    ("/v1/files", {"purpose": "assistants"}, ("scan", PNG, "application/pdf"), "png", "pdf"),
    ("/v1/files", {"purpose": "assistants"}, ("notes.txt", PDF, "text/plain"), "pdf", "text"),
    ("/v1/ocr", {}, ("scan.pdf", PNG, "application/pdf"), "png", "pdf"),
    ("/v1/data/documents", {}, ("notes.md", PDF, "text/markdown"), "pdf", "text"),
    (
        "/v1/audio/transcriptions",
        {"model": "whisper-1"},
        ("a.mp3", WAV, "audio/mpeg"),
        "wav",
        "mp3",
    ),
    ("/v1/audio/transcriptions", {"model": "whisper-1"}, ("a.wav", WAV, "audio/ogg"), "wav", "ogg"),
    ("/v1/audio/translations", {"model": "whisper-1"}, ("a.wav", WAV, "video/webm"), "wav", "webm"),
]


@pytest.mark.parametrize(("path", "fields", "file", "detected", "declared"), MISMATCHES)
async def test_a_declared_type_the_bytes_contradict_is_a_400_naming_both(
    http: httpx.AsyncClient,
    gateway: RunningGateway,
    path: str,
    fields: dict[str, str],
    file: tuple[str, bytes, str | None],
    detected: str,
    declared: str,
) -> None:
    name, data, content_type = file
    part = (name, data) if content_type is None else (name, data, content_type)
    error = refused(await http.post(path, files={"file": part}, data=fields), detected, declared)
    assert name in error["message"] or str(content_type) in error["message"]
    assert gateway.state.files.blobs.stored() == []
    assert gateway.state.documents.blobs.stored() == []
    await gateway.state.usage.flush()
    billed = await gateway.state.db.run(
        lambda d: d.execute("SELECT count(*) FROM usage_records WHERE cost_usd > 0").fetchone()
    )
    assert billed[0] == 0


AGREEING = [
    ("scan.png", PNG, "image/png"),
    ("scan.bin", PNG, "application/octet-stream"),  # declares nothing
    ("scan", PNG, None),
    ("table.csv", b"a,b\n1,2\n", "application/vnd.ms-excel"),  # a Windows browser's CSV
    ("table.csv", b"a,b\n1,2\n", "text/plain"),
    ("report.pdf", PDF, "application/x-pdf"),
]


@pytest.mark.parametrize("file", AGREEING, ids=lambda f: f"{f[0]}:{f[2]}")
async def test_a_declaration_that_agrees_or_names_nothing_is_accepted(
    http: httpx.AsyncClient, file: tuple[str, bytes, str | None]
) -> None:
    name, data, content_type = file
    part = (name, data) if content_type is None else (name, data, content_type)
    answer = await http.post("/v1/files", files={"file": part}, data={"purpose": "assistants"})
    assert answer.status_code == 200, answer.text


async def test_audio_whose_name_and_type_agree_is_transcribed(http: httpx.AsyncClient) -> None:
    for name, content_type in (("a.wav", "audio/x-wav"), ("a.wave", "audio/wav"), ("a", None)):
        part = (name, WAV) if content_type is None else (name, WAV, content_type)
        answer = await http.post(
            "/v1/audio/transcriptions", files={"file": part}, data={"model": "whisper-1"}
        )
        assert answer.status_code == 200, answer.text
