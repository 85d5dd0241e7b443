"""Documents and audio sent to a pass-through model (issue 36 point 4): a model id the
catalog does not know, allowed by the operator for one vendor, or forced to it with
`provider`. A part its vendor's chat API has no place for (Cohere: documents and audio;
Anthropic: audio) is a 400 naming it and nothing reaches the vendor, never sent without
it; the vendors that take a part get it. Through the official `openai` client.

Planning refuses first (a pass-through model is described by its provider's dearest
catalog model, whose capabilities it takes); the adapters refuse too, for a target
without catalog facts (`tests/providers/test_unsent_parts.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.gateway.conftest import gateway_settings
from tests.gateway.test_chat_file_parts import AUDIO_PART, PDF_PART, error_of, files_message

PASSTHROUGH = "cohere/command-z*, anthropic/claude-z*, google/gemini-z*, mistral/mistral-z*"
SKIP: Any = {"service": {"cache": "skip"}}
AUDIO = "input_audio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return gateway_settings(tmp_path, usage_writer="thread", passthrough_models=PASSTHROUGH)


def vendor_calls(gateway: RunningGateway, vendor: str) -> int:
    assert gateway.sim is not None
    return sum(1 for r in gateway.sim.requests if r.vendor == vendor)


FORCED: Any = {"provider": "cohere", **SKIP}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("model", "vendor", "parts", "param", "kind"),
    [
        ("command-z-1", "cohere", (PDF_PART,), "messages[0].content[1]", "file"),
        ("cohere/command-z-2", "cohere", (PDF_PART,), "messages[0].content[1]", "file"),
        ("command-z-1", "cohere", (AUDIO_PART,), "messages[0].content[1]", "input_audio"),
        ("claude-z-1", "anthropic", (PDF_PART, AUDIO_PART), "messages[0].content[2]", AUDIO),
    ],
)
async def test_a_part_the_vendor_takes_no_place_for_is_refused_by_name(
    client: openai.AsyncOpenAI,
    gateway: RunningGateway,
    model: str,
    vendor: str,
    parts: tuple[dict[str, Any], ...],
    param: str,
    kind: str,
    stream: bool,
) -> None:
    before = vendor_calls(gateway, vendor)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model=model, messages=files_message(*parts), stream=stream, extra_body=SKIP
        )
    error = error_of(caught)
    assert (error["param"], error["value"], error["provider"]) == (param, kind, vendor)
    assert f"'{param}' cannot be" in error["message"]
    assert vendor_calls(gateway, vendor) == before


async def test_a_model_forced_to_cohere_is_refused_too_and_answers_text(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="command-q-7", messages=files_message(AUDIO_PART), extra_body=FORCED
        )
    assert error_of(caught)["param"] == "messages[0].content[1]"
    before = vendor_calls(gateway, "cohere")
    answer = await client.chat.completions.create(
        model="command-q-7", messages=[{"role": "user", "content": "Hello"}], extra_body=FORCED
    )
    assert answer.choices[0].message.content
    assert vendor_calls(gateway, "cohere") == before + 1


@pytest.mark.parametrize(
    ("model", "part", "received"),
    [
        ("claude-z-1", PDF_PART, "[received 1: document report.pdf]"),
        ("gemini-z-1", PDF_PART, "[received 1: document application/pdf]"),
        ("gemini-z-1", AUDIO_PART, "This is a simulated transcription of 1.0 seconds"),
        # Mistral's dearest chat model reads no documents, but mistral-large and small do:
        # a pass-through id may be asked what any of its vendor's models takes
        ("mistral-z-1", PDF_PART, "[received 1: document"),
    ],
)
async def test_vendors_that_take_a_part_get_it(
    client: openai.AsyncOpenAI, model: str, part: dict[str, Any], received: str
) -> None:
    answer = await client.chat.completions.create(
        model=model, messages=files_message(part), extra_body=SKIP
    )
    assert (answer.choices[0].message.content or "").startswith(received)
