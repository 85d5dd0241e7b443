"""Real answers of the audio, files and OCR endpoints against their documented schemas.

The fuzz test mostly reaches these endpoints' error paths (generated uploads are not
audio or documents); here each success is produced on purpose, with the local engines,
and its status, content type and body are checked against `/openapi.json`.
"""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator

from gateway.app.server import RunningGateway
from tests.gateway import documents
from tests.gateway.test_files_api import processed
from tests.operator.test_openapi import fetch_document

MAPPINGS = "/v1/management/voice-mappings"


def conforms(document: dict[str, Any], method: str, path: str, response: httpx.Response) -> None:
    """`response` has a documented status and media type, and its JSON body the schema."""
    operation = document["paths"][path][method]
    answer = operation["responses"].get(str(response.status_code))
    assert answer is not None, (method, path, response.status_code, response.text[:300])
    media = response.headers["content-type"].split(";")[0].strip()
    content = answer["content"]
    assert media in content or "*/*" in content, (method, path, media, list(content))
    if media == "application/json":
        schema = content[media]["schema"] | {"components": document["components"]}
        Draft202012Validator(schema).validate(response.json())


async def test_audio_answers_match_the_document(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    doc = await fetch_document(gateway)
    voices = await http.get("/v1/audio/voices")
    conforms(doc, "get", "/v1/audio/voices", voices)
    voice_id = voices.json()["voices"][0]["id"]
    path = "/v1/audio/voices/{voice_id}"
    conforms(doc, "get", path, await http.get(f"/v1/audio/voices/{voice_id}"))
    speech_body = {"model": "local-espeak-ng", "voice": "calm", "input": "Hello there."}
    for fmt in ("wav", "pcm"):
        spoken = await http.post("/v1/audio/speech", json=speech_body | {"response_format": fmt})
        conforms(doc, "post", "/v1/audio/speech", spoken)
    streamed = await http.post("/v1/audio/speech", json=speech_body | {"stream": True})
    conforms(doc, "post", "/v1/audio/speech", streamed)
    wav = await http.post("/v1/audio/speech", json=speech_body | {"response_format": "wav"})
    for fmt in ("json", "verbose_json", "text", "srt", "vtt"):
        heard = await http.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.wav", wav.content)},
            data={"model": "local-whisper-tiny-en", "response_format": fmt},
            timeout=60,
        )
        conforms(doc, "post", "/v1/audio/transcriptions", heard)
    streamed = await http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", wav.content)},
        data={"model": "local-whisper-tiny-en", "stream": "true"},
        timeout=60,
    )
    conforms(doc, "post", "/v1/audio/transcriptions", streamed)


async def test_voice_mapping_answers_match_the_document(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    doc = await fetch_document(gateway)
    one = f"{MAPPINGS}/{{mapping_id}}"
    body = {"name": "brand", "mappings": {"local": "en-us+f4"}, "default_settings": {"speed": 1}}
    created = await http.post(MAPPINGS, json=body)
    conforms(doc, "post", MAPPINGS, created)
    conforms(doc, "post", MAPPINGS, await http.post(MAPPINGS, json=body))  # 409
    mapping_id = created.json()["id"]
    conforms(doc, "get", MAPPINGS, await http.get(MAPPINGS))
    conforms(doc, "get", one, await http.get(f"{MAPPINGS}/{mapping_id}"))
    patched = await http.patch(f"{MAPPINGS}/{mapping_id}", json={"description": "d"})
    conforms(doc, "patch", one, patched)
    conforms(doc, "put", one, await http.put(f"{MAPPINGS}/{mapping_id}", json=body))
    conforms(doc, "delete", one, await http.delete(f"{MAPPINGS}/{mapping_id}"))
    conforms(doc, "get", one, await http.get(f"{MAPPINGS}/{mapping_id}"))  # 404


async def test_file_and_ocr_answers_match_the_document(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    doc = await fetch_document(gateway)
    text = b"Contact Dr. Jane Doe at jane.doe@example.com about invoice 4711.\n"
    uploaded = await http.post(
        "/v1/files",
        files={"file": ("note.txt", text)},
        data={"purpose": "document", "metadata": '{"team": "a"}', "detect_pii": "true"},
    )
    conforms(doc, "post", "/v1/files", uploaded)
    file_id = uploaded.json()["id"]
    await processed(http, file_id)
    conforms(doc, "get", "/v1/files", await http.get("/v1/files?include=processing"))
    for tail in ("", "/status", "/text", "/chunks", "/pii", "/content"):
        path = "/v1/files/{file_id}" + tail
        conforms(doc, "get", path, await http.get(f"/v1/files/{file_id}{tail}"))
    one = "/v1/files/{file_id}"
    patched = await http.patch(f"/v1/files/{file_id}", json={"metadata": {"team": "b"}})
    conforms(doc, "patch", one, patched)
    conforms(doc, "delete", one, await http.delete(f"/v1/files/{file_id}"))
    conforms(doc, "get", one, await http.get(f"/v1/files/{file_id}"))  # 404
    image = documents.text_image(["Invoice 4711 for Jane Doe"])
    read = await http.post(
        "/v1/ocr", files={"file": ("scan.png", image)}, data={"model": "local"}, timeout=60
    )
    conforms(doc, "post", "/v1/ocr", read)
