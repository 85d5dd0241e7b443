"""The Responses API's `truncation`, log probabilities and `cancel`, through the official
`openai` client (issue 36): what users send that chat's path can honour."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseOutputMessage, ResponseOutputText

from gateway.app.server import RunningGateway

SMALL = "gpt-4o-mini"  # a window of 128,000 tokens
TURN = "word " * 44_000  # about 55,000 tokens


def openai_bodies(gateway: RunningGateway) -> list[dict[str, Any]]:
    assert gateway.sim is not None
    return [r.body for r in gateway.sim.requests if r.vendor == "openai"]


def text_part(response: Response) -> ResponseOutputText:
    message = response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    part = message.content[0]
    assert isinstance(part, ResponseOutputText)
    return part


async def long_history(client: openai.AsyncOpenAI) -> str:
    """Two stored turns of about 55,000 tokens each, the first marked: the id of the last."""
    first = await client.responses.create(model=SMALL, input="FIRST " + TURN)
    second = await client.responses.create(
        model=SMALL, input="SECOND " + TURN, previous_response_id=first.id
    )
    return second.id


async def test_truncation_auto_drops_the_oldest_turns_to_fit(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    previous = await long_history(client)
    response = await client.responses.create(
        model=SMALL,
        instructions="Be brief.",
        input="THIRD " + TURN,
        previous_response_id=previous,
        truncation="auto",
    )
    assert response.status == "completed" and response.output_text
    assert response.truncation == "auto"
    sent = openai_bodies(gateway)[-1]["messages"]
    texts = [str(message["content"]) for message in sent]
    assert texts[0] == "Be brief."  # the instructions are never dropped
    assert not any(text.startswith("FIRST") for text in texts)  # the oldest turn went
    assert [t[:6] for t in texts[1:] if t[:6] in ("SECOND", "THIRD ")] == ["SECOND", "THIRD "]
    assert sent[1]["role"] == "assistant"  # items go one by one: the first answer stayed


async def test_without_truncation_a_long_history_is_context_length_exceeded(
    client: openai.AsyncOpenAI,
) -> None:
    previous = await long_history(client)
    cases: list[dict[str, Any]] = [{}, {"truncation": "disabled"}]
    for truncation in cases:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(
                model=SMALL, input="THIRD " + TURN, previous_response_id=previous, **truncation
            )
        assert caught.value.code == "context_length_exceeded"


async def test_truncation_cannot_shorten_the_last_turn(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=SMALL, input="word " * 110_000, truncation="auto")
    assert caught.value.code == "context_length_exceeded"


async def test_log_probabilities_on_the_output_text(client: openai.AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="gpt-4.1-mini",
        input="Hello there",
        include=["message.output_text.logprobs"],
        top_logprobs=2,
    )
    part = text_part(response)
    assert part.logprobs
    assert "".join(token.token for token in part.logprobs) == part.text
    assert all(len(token.top_logprobs) == 2 for token in part.logprobs)
    assert response.top_logprobs == 2


async def test_streamed_log_probabilities_spell_the_text(client: openai.AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="gpt-4.1-mini",
        input="Hello there",
        include=["message.output_text.logprobs"],
        stream=True,
    )
    deltas, tokens, done, part = "", [], None, None
    async for event in stream:
        if event.type == "response.output_text.delta":
            deltas += event.delta
            tokens += [token.token for token in event.logprobs]
        elif event.type == "response.output_text.done":
            done = event
        elif event.type == "response.completed":
            part = text_part(event.response)
    assert deltas and "".join(tokens) == deltas
    assert done is not None and [token.token for token in done.logprobs] == tokens
    assert part is not None and part.logprobs is not None
    assert [token.token for token in part.logprobs] == tokens


async def test_log_probabilities_a_model_cannot_give_are_refused(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="claude-haiku-4-5", input="Hi", include=["message.output_text.logprobs"]
        )
    assert (caught.value.code, caught.value.param) == ("unsupported_parameter", "logprobs")


async def test_cancelling_a_response_not_made_in_background_is_a_400(
    client: openai.AsyncOpenAI,
) -> None:
    response = await client.responses.create(model="gpt-4o-mini", input="Hi")
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.cancel(response.id)
    assert caught.value.code == "response_not_cancellable"
    assert (await client.responses.retrieve(response.id)).status == "completed"


async def test_cancelling_an_unknown_response_is_a_404(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.cancel("resp_nothing")
    assert caught.value.code == "response_not_found"
