"""`document` blocks and adaptive thinking on `POST /v1/messages`, through the official
`anthropic` client (issue 36 point 3): a PDF or a text document reaches an Anthropic and
an OpenAI model in each one's shape, a URL source is a 400 naming it, and
`thinking: {type: "adaptive"}` (the SDK's advice for current models) turns thinking on.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

from gateway.app.server import RunningGateway
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.documents import pdf_with_text

PDF = base64.b64encode(pdf_with_text(["The quarterly report."])).decode()
HELLO: Any = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
async def claude(gateway: RunningGateway) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key=ADMIN_KEY, max_retries=0
    ) as c:
        yield c


def with_documents(*blocks: dict[str, Any]) -> Any:
    return [{"role": "user", "content": [*blocks, {"type": "text", "text": "Summarise."}]}]


PDF_BLOCK = {
    "type": "document",
    "title": "report.pdf",
    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
}
TEXT_BLOCK = {
    "type": "document",
    "title": "notes.txt",
    "source": {"type": "text", "media_type": "text/plain", "data": "Meeting on Tuesday."},
}


def text_of(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "gpt-4o-mini"])
async def test_documents_reach_the_model_in_its_vendors_shape(
    claude: anthropic.AsyncAnthropic, model: str
) -> None:
    message = await claude.messages.create(
        model=model, max_tokens=200, messages=with_documents(PDF_BLOCK, TEXT_BLOCK)
    )
    assert text_of(message).startswith("[received 2: document report.pdf; document notes.txt]")


async def test_a_url_document_source_is_a_400_naming_it(
    claude: anthropic.AsyncAnthropic,
) -> None:
    block = {"type": "document", "source": {"type": "url", "url": "https://x.example/a.pdf"}}
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="claude-haiku-4-5", max_tokens=200, messages=with_documents(block)
        )
    error = caught.value.body["error"]  # type: ignore[index]
    assert "URL sources are not fetched" in error["message"]
    assert error["param"] == "messages.0.content.0.source"


async def test_a_document_for_a_model_that_reads_none_is_refused(
    claude: anthropic.AsyncAnthropic,
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="command-a-03-2025", max_tokens=200, messages=with_documents(PDF_BLOCK)
        )
    assert "file_input" in caught.value.body["error"]["message"]  # type: ignore[index]


async def test_adaptive_thinking_turns_thinking_on(claude: anthropic.AsyncAnthropic) -> None:
    """The simulated model's thinking adds to its output tokens: the same question with
    adaptive thinking costs more than without, and `display` is taken."""
    plain = await claude.messages.create(model="claude-haiku-4-5", max_tokens=2000, messages=HELLO)
    thought = await claude.messages.create(
        model="claude-haiku-4-5",
        max_tokens=2000,
        messages=HELLO,
        thinking={"type": "adaptive", "display": "summarized"},
    )
    assert thought.usage.output_tokens > plain.usage.output_tokens
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="claude-haiku-4-5",
            max_tokens=2000,
            messages=HELLO,
            thinking={"type": "adaptive", "display": "loud"},  # type: ignore[typeddict-item]
        )
    assert caught.value.body["error"]["param"] == "thinking.display"  # type: ignore[index]


ASKED_FOR_A_TOOL: Any = [
    {"role": "user", "content": "What is the weather?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}],
    },
]


@pytest.mark.parametrize(
    ("system", "history", "blocks", "param"),
    [
        (None, [], [{"type": "text", "text": "Read:"}, PDF_BLOCK], "messages.0.content.1"),
        ("Be brief.", [], [{"type": "text", "text": "Read:"}, PDF_BLOCK], "messages.0.content.1"),
        (
            [{"type": "text", "text": "Be brief."}],
            ASKED_FOR_A_TOOL,
            [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny."},
                {"type": "document", "context": "From the archive.", **PDF_BLOCK},
            ],
            "messages.2.content.1",
        ),
    ],
)
async def test_a_refused_document_is_named_by_the_requests_own_path(
    claude: anthropic.AsyncAnthropic, system: Any, history: Any, blocks: Any, param: str
) -> None:
    """Chat names the part in its own messages (a system prompt is its first, a tool
    result a message of its own, a document's context a part before it): the refusal
    names the block where the client wrote it."""
    extra: Any = {} if system is None else {"system": system}
    with pytest.raises(anthropic.BadRequestError) as caught:
        await claude.messages.create(
            model="command-a-03-2025",
            max_tokens=200,
            messages=[*history, {"role": "user", "content": blocks}],
            **extra,
        )
    error = caught.value.body["error"]  # type: ignore[index]
    assert (error["param"], error["value"]) == (param, "file")
    assert error["message"].startswith(f"'{param}' cannot be honoured by the model")
