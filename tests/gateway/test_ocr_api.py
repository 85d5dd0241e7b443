"""POST /v1/ocr through real HTTP: Mistral's OCR (the simulator) first, the local Tesseract
engine last in the chain; the spec's response shape; every bad input a clear 4xx."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from PIL import Image

from gateway.app.server import RunningGateway
from providers.sim.core import Fault

from . import documents


async def ocr(http: httpx.AsyncClient, name: str, data: bytes, **fields: str) -> httpx.Response:
    return await http.post("/v1/ocr", files={"file": (name, data)}, data=fields, timeout=60)


def assert_shape(body: dict[str, Any]) -> None:
    assert set(body) == {"document_id", "total_pages", "pages", "processing_time_ms", "_gateway"}
    assert set(body["_gateway"]) == {"provider", "model", "cost"}
    for page in body["pages"]:
        assert set(page) == {"page_number", "text", "tables", "forms", "confidence"}
        assert 0 <= page["confidence"] <= 1


async def test_a_pdf_is_read_by_mistral_and_priced_per_page(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    pdf = documents.pdf_with_text(["Invoice: 4711", "Total: 12 EUR", "Thanks"])
    answer = await ocr(http, "invoice.pdf", pdf, pages="1-2")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert_shape(body)
    assert body["_gateway"]["provider"] == "mistral"
    assert body["_gateway"]["model"] == "mistral-ocr-latest"
    assert body["_gateway"]["cost"]["usd"] == pytest.approx(2 * 0.002)
    assert body["total_pages"] == 3
    assert [(p["page_number"], p["text"]) for p in body["pages"]] == [
        (1, "Invoice: 4711"),
        (2, "Total: 12 EUR"),
    ]
    assert body["pages"][0]["forms"] == [{"key": "Invoice", "value": "4711", "confidence": 1.0}]
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(d.query("SELECT provider, endpoint, pages, cost_usd FROM usage_records"))
    )
    assert rows == [
        {"provider": "mistral", "endpoint": "ocr", "pages": 2, "cost_usd": pytest.approx(0.004)}
    ]


async def test_a_scanned_pdf_is_read_by_the_default_chain(http: httpx.AsyncClient) -> None:
    """A PDF page with no text layer is what OCR is for: Mistral (its simulator too) reads
    the page's image; it was a 422 when the simulator read only text layers."""
    scan = documents.scanned_pdf(["Scanned lease 2024"])
    answer = await ocr(http, "scan.pdf", scan)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert_shape(body)
    assert body["_gateway"]["provider"] == "mistral"
    assert body["total_pages"] == 1
    assert body["pages"][0]["text"].startswith("Simulated OCR of image ")


async def test_the_local_engine_reads_a_scanned_image(http: httpx.AsyncClient) -> None:
    image = documents.text_image(["Invoice 4711 for Jane Doe"])
    answer = await ocr(http, "scan.png", image, model="local", output_format="text")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert_shape(body)
    assert body["_gateway"] == {"provider": "local", "model": "local", "cost": {"usd": 0.0}}
    assert body["pages"][0]["text"] == "Invoice 4711 for Jane Doe"
    assert body["pages"][0]["confidence"] > 0.8


async def test_a_failing_mistral_falls_back_to_the_local_engine(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="mistral-ocr-latest", status=500))
    answer = await ocr(http, "scan.jpg", documents.text_image(["Lease 2024"], fmt="JPEG"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["_gateway"]["provider"] == "local"
    assert answer.json()["pages"][0]["text"] == "Lease 2024"


async def test_a_multi_page_tiff_is_read_page_by_page(http: httpx.AsyncClient) -> None:
    frames = [
        Image.open(io.BytesIO(documents.text_image([line]))) for line in ("Page one", "Page two")
    ]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    answer = await ocr(http, "scan.tiff", out.getvalue(), model="local", pages="2")
    assert answer.status_code == 200, answer.text
    assert answer.json()["total_pages"] == 2
    assert [p["text"] for p in answer.json()["pages"]] == ["Page two"]


def blank_png() -> bytes:
    out = io.BytesIO()
    Image.new("L", (400, 200), 255).save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "fields", "status", "code"),
    [
        pytest.param(
            "a.pdf",
            documents.pdf_with_text(["one"]),
            {"pages": "2-3"},
            400,
            "invalid_pages",
            id="pages outside the document",
        ),
        pytest.param(
            "a.png", blank_png(), {"pages": "3-2"}, 400, "invalid_pages", id="range ending early"
        ),
        pytest.param(
            "a.png", blank_png(), {"language_hints": "en,"}, 400, "invalid_request", id="hints"
        ),
        pytest.param("a.pdf", b"%PDF-1.7 nothing", {}, 400, "invalid_file", id="truncated pdf"),
        pytest.param("a.txt", b"plain text", {}, 400, "invalid_file_type", id="text file"),
        pytest.param("a.docx", documents.docx(["x"]), {}, 400, "invalid_file_type", id="docx file"),
        pytest.param("a.bin", b"\x00\x01garbage", {}, 400, "invalid_file_type", id="no type"),
        pytest.param("a.png", b"", {}, 400, "invalid_request", id="empty file"),
        pytest.param("a.png", blank_png(), {"model": "local"}, 422, "ocr_failed", id="no text"),
        pytest.param(
            "a.png",
            blank_png(),
            {"output_format": "html"},
            400,
            "invalid_request",
            id="unknown output format",
        ),
        pytest.param(
            "a.png", blank_png(), {"pages": "two"}, 400, "invalid_request", id="bad page range"
        ),
        pytest.param(
            "a.png",
            blank_png(),
            {"extract_tables": "maybe"},
            400,
            "invalid_request",
            id="not a boolean",
        ),
    ],
)
async def test_bad_ocr_requests(
    http: httpx.AsyncClient,
    gateway: RunningGateway,
    name: str,
    data: bytes,
    fields: dict[str, str],
    status: int,
    code: str,
) -> None:
    answer = await ocr(http, name, data, **fields)
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code
    assert gateway.state.files.blobs.stored() == []


async def test_language_hints_as_repeated_fields_or_brackets(http: httpx.AsyncClient) -> None:
    """An array in a form comes as repeated parts or as `name[]` parts: every value counts
    (repeated parts kept only the last, and `language_hints[]` was an unknown field)."""
    image = documents.text_image(["Lease 2024"])

    async def hints(*parts: tuple[str, str]) -> httpx.Response:
        form = [("file", ("scan.png", image, "image/png")), *((n, (None, v)) for n, v in parts)]
        return await http.post("/v1/ocr", files=form, data={"model": "local"}, timeout=60)

    answer = await hints(("language_hints[]", "en"), ("language_hints[]", "de"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["pages"][0]["text"] == "Lease 2024"
    refused = await hints(("language_hints", "no code!"), ("language_hints", "en"))
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "language_hints"
    assert refused.json()["error"]["value"] == "no code!"


async def test_a_table_comes_back_as_rows(http: httpx.AsyncClient) -> None:
    """Mistral answers tables apart with `table_format: markdown` (its simulator inlined
    them, and the rows were lost: the text drops table lines, and no table was reported)."""
    pdf = documents.pdf_with_text(["Price list\n| item | cost |\n|---|---|\n| paper | 12 |"])
    answer = await ocr(http, "prices.pdf", pdf)
    assert answer.status_code == 200, answer.text
    page = answer.json()["pages"][0]
    assert [t["rows"] for t in page["tables"]] == [[["item", "cost"], ["paper", "12"]]]
    assert page["text"] == "Price list"
    off = (await ocr(http, "prices.pdf", pdf, extract_tables="false")).json()["pages"][0]
    assert off["tables"] == []
