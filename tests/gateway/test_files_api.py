"""Files through the real HTTP interface: upload with the official client, process, read back.

Documents are made in the tests (tests/gateway/documents.py); the checks compare what the
gateway extracted, chunked, embedded and found against the source text.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.files import render
from gateway.kernels.text.chunking import count_tokens
from store.files import FileRecord

from . import documents

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def processed(http: httpx.AsyncClient, file_id: str) -> dict[str, Any]:
    """The status record once processing has ended (polled as a client would)."""
    with trio.fail_after(60):
        while True:
            status = (await http.get(f"/v1/files/{file_id}/status")).json()
            if status["status"] in ("processed", "error"):
                return status
            await trio.sleep(0.05)


async def upload(
    http: httpx.AsyncClient,
    name: str,
    data: bytes,
    *,
    purpose: str = "document",
    **fields: str,
) -> httpx.Response:
    return await http.post(
        "/v1/files", files={"file": (name, data)}, data={"purpose": purpose, **fields}
    )


async def test_the_official_client_uploads_lists_reads_and_deletes(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    created = await client.files.create(file=("notes.txt", b"hello files"), purpose="assistants")
    assert created.object == "file"
    assert created.status == "uploaded"
    assert created.bytes == 11
    assert created.filename == "notes.txt"
    assert created.purpose == "assistants"

    listed = await client.files.list()
    assert [f.id for f in listed.data] == [created.id]
    again = await client.files.retrieve(created.id)
    assert again.id == created.id
    content = await client.files.content(created.id)
    assert content.content == b"hello files"
    assert content.response.headers["content-type"].startswith("text/plain")
    disposition = content.response.headers["content-disposition"]
    assert disposition == 'attachment; filename="notes.txt"'  # the name it was uploaded as
    accented = await client.files.create(file=("Résumé 履歴.txt", b"cv"), purpose="assistants")
    answer = await client.files.with_raw_response.content(accented.id)
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == (
        'attachment; filename="R_sum_ __.txt"; '
        "filename*=UTF-8''R%C3%A9sum%C3%A9%20%E5%B1%A5%E6%AD%B4.txt"
    )
    await client.files.delete(accented.id)

    deleted = await client.files.delete(created.id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError) as caught:
        await client.files.retrieve(created.id)
    assert caught.value.status_code == 404
    assert gateway.state.files.blobs.stored() == []


async def test_the_official_client_deletes_every_file_it_lists(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    """Auto-pagination asks for the page after the last file of the one before, which the
    loop has just deleted: that cursor was a 400 ('after' names no file) after one page."""
    for index in range(7):
        await client.files.create(file=(f"{index}.txt", b"x%d" % index), purpose="assistants")
    deleted = 0
    async for listed in client.files.list(limit=3):
        await client.files.delete(listed.id)
        deleted += 1
    assert deleted == 7
    assert (await client.files.list()).data == []


async def test_the_status_of_a_file_not_processed_shows_its_upload_complete(
    http: httpx.AsyncClient,
) -> None:
    created = (await upload(http, "plain.txt", b"plain")).json()
    status = (await http.get(f"/v1/files/{created['id']}/status")).json()
    assert status["status"] == "uploaded"
    stages = status["processing"]["stages"]
    assert stages.pop("upload") == "complete"  # was "skipped": the file was uploaded
    assert set(stages.values()) == {"skipped"}


def test_a_queued_file_shows_its_stages_pending() -> None:
    """Between the upload and the worker's first step the record holds no stages yet."""
    queued = FileRecord(
        workspace_id="default", key_id="key_x", filename="q.txt", purpose="document",
        kind="txt", content_type="text/plain", bytes=1, sha256="0" * 64,
        created_at=1_700_000_000, process_id="proc_q",
    )  # fmt: skip
    stages = render.status_record(queued)["processing"]["stages"]
    assert stages.pop("upload") == "complete"
    assert set(stages.values()) == {"pending"}


async def test_a_text_pdf_is_extracted_chunked_embedded_and_scanned(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    page_one = "Quarterly contract review. " * 30
    page_two = "Contact jane.doe@example.com about invoice 4711."
    answer = await upload(
        http,
        "contract.pdf",
        documents.pdf_with_text([page_one, page_two]),
        service=json.dumps(
            {
                "process": True,
                "vectorize": True,
                "detect_pii": True,
                "chunk_size": 64,
                "chunk_overlap": 16,
            }
        ),
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "uploaded"
    assert body["service"]["processing"] is True
    assert body["service"]["process_id"].startswith("proc_")

    status = await processed(http, body["id"])
    assert status["status"] == "processed", status
    assert status["processing"]["stages"]["chunking"] == "complete"
    assert status["processing"]["stages"]["embedding"] == "complete"
    assert status["processing"]["stages"]["ocr"] == "skipped"
    assert status["results"]["pages"] == 2

    text = (await http.get(f"/v1/files/{body['id']}/text")).json()
    assert [p["number"] for p in text["pages"]] == [1, 2]
    assert "Quarterly contract review." in text["pages"][0]["text"]
    assert text["pages"][1]["text"] == page_two
    full = text["text"]
    assert text["metadata"]["total_characters"] == len(full)

    chunks = (await http.get(f"/v1/files/{body['id']}/chunks", params={"limit": 100})).json()
    assert chunks["total_chunks"] == status["results"]["chunks"] == len(chunks["chunks"])
    for chunk in chunks["chunks"]:
        assert full[chunk["start_char"] : chunk["end_char"]] == chunk["text"]
        assert chunk["tokens"] <= 64
        assert abs(count_tokens(chunk["text"]) - chunk["tokens"]) <= 1
        assert chunk["embedding_id"] is not None
    assert {c["page"] for c in chunks["chunks"]} == {1, 2}
    vectors = await gateway.state.db.run(
        lambda d: __import__("store.files").files.vectors(d, body["id"])
    )
    assert len(vectors) == chunks["total_chunks"]

    report = (await http.get(f"/v1/files/{body['id']}/pii")).json()
    assert report["summary"] == {"email": 1}
    finding = report["findings"][0]
    start, end = finding["location"]["start"], finding["location"]["end"]
    assert full[start:end] == "jane.doe@example.com"
    assert finding["location"]["page"] == 2
    assert finding["redacted"] is True
    assert finding["text"] == "j***.***@*******.**m"

    assert (await http.delete(f"/v1/files/{body['id']}")).json()["deleted"] is True
    counts = await gateway.state.db.run(
        lambda d: [
            d.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("files", "file_pages", "file_chunks", "file_vectors", "file_pii")
        ]
    )
    assert counts == [0, 0, 0, 0, 0]
    assert gateway.state.files.blobs.stored() == []


async def test_a_scanned_page_image_is_read_by_ocr(http: httpx.AsyncClient) -> None:
    answer = await upload(
        http, "scan.png", documents.text_image(["Invoice 4711 for Jane Doe"]), process="true"
    )
    assert answer.status_code == 200, answer.text
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    assert status["processing"]["stages"]["ocr"] == "complete"
    text = (await http.get(f"/v1/files/{answer.json()['id']}/text")).json()
    assert text["text"] == "Invoice 4711 for Jane Doe"


async def test_a_scanned_pdf_page_goes_to_ocr(http: httpx.AsyncClient) -> None:
    answer = await upload(
        http, "scan.pdf", documents.scanned_pdf(["Scanned lease agreement"]), process="true"
    )
    status = await processed(http, answer.json()["id"])
    assert status["processing"]["stages"]["ocr"] == "complete", status
    text = (await http.get(f"/v1/files/{answer.json()['id']}/text")).json()
    assert "Scanned lease agreement" in text["text"]


async def test_docx_and_xlsx_are_extracted(http: httpx.AsyncClient) -> None:
    word = await upload(
        http,
        "memo.docx",
        documents.docx(["First paragraph.", "Second paragraph."]),
        process="true",
    )
    sheet = await upload(
        http, "costs.xlsx", documents.xlsx([["item", "cost"], ["paper", 12.5]]), process="true"
    )
    for answer in (word, sheet):
        assert answer.status_code == 200, answer.text
        status = await processed(http, answer.json()["id"])
        assert status["status"] == "processed", status
    word_text = (await http.get(f"/v1/files/{word.json()['id']}/text")).json()["text"]
    assert word_text == "First paragraph.\nSecond paragraph."
    sheet_text = (await http.get(f"/v1/files/{sheet.json()['id']}/text")).json()["text"]
    assert sheet_text == "item\tcost\npaper\t12.5"


async def test_a_word_97_doc_is_extracted(http: httpx.AsyncClient) -> None:
    answer = await upload(
        http, "memo.doc", documents.word97(["Première ligne.\nSecond line."]), process="true"
    )
    assert answer.status_code == 200, answer.text
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    text = (await http.get(f"/v1/files/{answer.json()['id']}/text")).json()["text"]
    assert text == "Première ligne.\nSecond line.\n1"


async def test_a_wav_is_transcribed_into_the_files_text(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """`auto_transcribe` runs the audio family's transcription (the simulated vendor's
    scripted transcript here) in the uploader's name."""
    sim = gateway.sim
    assert sim is not None
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}") as control:
        script = {"texts": ["The contract renews on the first of May."]}
        assert (await control.post("/_sim/transcripts", json=script)).status_code == 201
    answer = await upload(
        http, "call.wav", documents.wav(), purpose="audio", auto_transcribe="true"
    )
    assert answer.status_code == 200, answer.text
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    assert status["processing"]["stages"]["transcription"] == "complete"
    text = (await http.get(f"/v1/files/{answer.json()['id']}/text")).json()
    assert "first of May" in str(text)


async def test_service_options_through_the_official_clients_extra_body(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    created = await client.files.create(
        file=("plan.md", b"# Plan\n\nShip the gateway. Email ops@example.com."),
        purpose="assistants",
        extra_body={"service": {"process": True, "detect_pii": True, "collection": "plans"}},
    )
    extra = created.model_extra or {}
    assert extra["service"]["processing"] is True
    status = await processed(http, created.id)
    assert status["status"] == "processed", status
    listed = (
        await http.get("/v1/files", params={"include": "processing", "collection": "plans"})
    ).json()
    (item,) = listed["data"]
    assert item["service"]["process_id"] == extra["service"]["process_id"]
    assert item["service"]["chunks"] == 1
    assert item["service"]["pages"] == 1
    assert item["service"]["vectors_stored"] == 0
    assert item["service"]["pii_detected"] is True
    assert item["service"]["classification"] == "confidential"
    plain = (await http.get("/v1/files", params={"collection": "plans"})).json()["data"][0]
    assert set(plain["service"]) == {"processing", "process_id"}


async def test_ocr_model_sends_scans_through_the_ocr_chain(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    image = documents.text_image(["Read by Mistral"])
    answer = await upload(
        http, "scan.png", image, service=json.dumps({"ocr_model": "mistral-ocr-latest"})
    )
    status = await processed(http, answer.json()["id"])
    assert status["status"] == "processed", status
    assert status["processing"]["stages"]["ocr"] == "complete"
    text = (await http.get(f"/v1/files/{answer.json()['id']}/text")).json()["text"]
    digest = hashlib.sha256(image).hexdigest()[:8]
    assert text == f"Simulated OCR of image {digest}."  # what the Mistral simulator reads
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query("SELECT provider, endpoint, pages FROM usage_records WHERE endpoint != 'files'")
        )
    )
    assert rows == [{"provider": "mistral", "endpoint": "ocr", "pages": 1}]
