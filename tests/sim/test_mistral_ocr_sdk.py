"""Mistral OCR: the official `mistralai` SDK's `ocr.process` and our adapter against the
simulator, on a PDF made in the test."""

from __future__ import annotations

import base64

import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError

from providers.mistral import MistralProvider
from providers.mistral_ocr import markdown_rows, ocr_payload
from providers.ocr_types import OcrRequest
from tests.gateway import documents

from .test_mistral_sdk import adapter, client, in_thread, sdk  # noqa: F401  (fixtures)

MODEL = "mistral-ocr-latest"
PDF = documents.pdf_with_text(["First page text", "Second page text"])


def pdf_url() -> str:
    return "data:application/pdf;base64," + base64.b64encode(PDF).decode()


async def test_sdk_ocr_process_reads_the_selected_pages(sdk: Mistral) -> None:  # noqa: F811
    client_ = sdk
    answer = await in_thread(
        lambda: client_.ocr.process(
            model=MODEL,
            document={"type": "document_url", "document_url": pdf_url()},
            pages=[1],
        )
    )
    assert [page.index for page in answer.pages] == [1]
    assert answer.pages[0].markdown == "Second page text"
    assert answer.usage_info.pages_processed == 1
    assert answer.model == MODEL


async def test_sdk_sees_an_out_of_range_page_as_400(sdk: Mistral) -> None:  # noqa: F811
    client_ = sdk
    with pytest.raises(SDKError) as caught:
        await in_thread(
            lambda: client_.ocr.process(
                model=MODEL,
                document={"type": "document_url", "document_url": pdf_url()},
                pages=[5],
            )
        )
    assert caught.value.status_code == 400


async def test_the_adapter_reads_a_pdf_and_counts_pages(
    adapter: MistralProvider,  # noqa: F811
) -> None:
    result = await adapter.ocr(
        OcrRequest(model=MODEL, document=PDF, content_type="application/pdf", pages=(1, 2))
    )
    assert [(p.number, p.text) for p in result.pages] == [
        (1, "First page text"),
        (2, "Second page text"),
    ]
    assert result.usage.pages == 2


def test_the_payload_is_mistrals_wire_format() -> None:
    image = OcrRequest(model=MODEL, document=b"\x89PNG", content_type="image/png", pages=(2,))
    payload = ocr_payload(image)
    assert payload["document"] == {
        "type": "image_url",
        "image_url": "data:image/png;base64," + base64.b64encode(b"\x89PNG").decode(),
    }
    assert payload["pages"] == [1]
    assert payload["table_format"] == "markdown"


def test_markdown_tables_become_rows() -> None:
    table = "| item | cost |\n|------|-----:|\n| paper | 12.5 |"
    assert markdown_rows(table) == (("item", "cost"), ("paper", "12.5"))
