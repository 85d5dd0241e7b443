"""A part a vendor's chat API has no place for is refused by its adapter, naming it,
never sent without it (`providers.content_parts.refuse_unsent_parts`): planning lets a
model without catalog facts through, so the adapter is the last place that knows."""

from __future__ import annotations

from typing import Any

import pytest

from providers.anthropic.payload import messages_payload
from providers.cohere.chat import chat_payload
from providers.errors import InvalidUpstreamRequest
from providers.types import ChatRequest

PDF: Any = {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}}
AUDIO: Any = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
TEXT: Any = {"type": "text", "text": "Read this."}


def request(*parts: Any) -> ChatRequest:
    return ChatRequest(
        model="any-model",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [TEXT, *parts]},
        ],
    )


def cohere(req: ChatRequest) -> Any:
    return chat_payload(req, stream=False, provider="cohere-eu")


def anthropic(req: ChatRequest) -> Any:
    return messages_payload(req, stream=False, default_max_tokens=100, provider="anthropic")


@pytest.mark.parametrize(
    ("build", "parts", "param", "kind"),
    [
        (cohere, (PDF,), "messages[1].content[1]", "file"),
        (cohere, (AUDIO,), "messages[1].content[1]", "input_audio"),
        (anthropic, (PDF, AUDIO), "messages[1].content[2]", "input_audio"),
    ],
)
def test_a_part_without_a_place_is_refused_naming_it(
    build: Any, parts: tuple[Any, ...], param: str, kind: str
) -> None:
    with pytest.raises(InvalidUpstreamRequest) as caught:
        build(request(*parts))
    assert (caught.value.param, caught.value.value) == (param, kind)
    assert f"'{param}' cannot be sent to" in caught.value.message


def test_parts_with_a_place_are_sent() -> None:
    assert len(cohere(request())["messages"][1]["content"]) == 1
    blocks = anthropic(request(PDF))["messages"][0]["content"]
    assert [block["type"] for block in blocks] == ["text", "document"]
