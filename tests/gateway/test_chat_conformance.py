"""Chat as the spec and the official client expect it, case by case: stop sequences on
every vendor, message fields named exactly in errors, the request id of an error answer,
and an upstream stream that sends something that is not JSON."""

from __future__ import annotations

import functools
from typing import Any

import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from providers.sim.core import Fault
from store import usage

CHAT_MODELS = [
    "gpt-4o-mini",
    "claude-haiku-4-5",
    "gemini-2.5-flash",
    "mistral-small-latest",
    "command-a-03-2025",
]
HELLO: Any = [{"role": "user", "content": "Hello there"}]


def upstream(model: str) -> str:
    """The id the simulator sees for a catalog model (faults are set per upstream id)."""
    info = load_catalog().model(model)
    assert info is not None
    return info.upstream_id


@pytest.mark.parametrize("model", CHAT_MODELS)
@pytest.mark.parametrize("stream", [False, True])
async def test_stop_ends_the_answer_before_the_sequence(
    client: openai.AsyncOpenAI, model: str, stream: bool
) -> None:
    """Only the Anthropic simulator honoured stop sequences: through the others a `stop`
    reached the vendor (as `stop`, `stopSequences`, `stop_sequences`) and was ignored."""
    skip: Any = {"service": {"cache": "skip"}}
    whole = await client.chat.completions.create(model=model, messages=HELLO, extra_body=skip)
    text = whole.choices[0].message.content or ""
    word = text.split()[3]
    if stream:
        chunks = client.chat.completions.create(
            model=model, messages=HELLO, stop=[word, "zzz"], stream=True, extra_body=skip
        )
        pieces = [c async for c in await chunks if c.choices]
        cut = "".join(c.choices[0].delta.content or "" for c in pieces)
        finish = pieces[-1].choices[0].finish_reason
    else:
        answer = await client.chat.completions.create(
            model=model, messages=HELLO, stop=word, extra_body=skip
        )
        cut, finish = answer.choices[0].message.content or "", answer.choices[0].finish_reason
    assert cut == text[: text.index(word)]
    assert finish == "stop"


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        ([{"role": "user", "content": "x", "name": 5}], "messages[0].name"),
        ([{"role": "user", "content": []}], "messages[0].content"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": "https://x/a.png"}]}],
            "messages[0].content[0].image_url.url",
        ),
    ],
)
async def test_bad_message_fields_name_their_exact_field(
    client: openai.AsyncOpenAI, messages: Any, param: str
) -> None:
    """A non-string `name` and an empty parts array were passed upstream (a 200), and a bad
    `image_url` named its parent rather than the field its message names."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    body: Any = caught.value.body
    assert (body["code"], body["param"]) == ("invalid_request", param)


async def test_an_error_answer_carries_the_request_id_of_its_usage_record(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """Refusals and provider failures answered without `X-Request-ID`, so a client (the
    official one reads it into `request_id`) had no id to quote for a failed call."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=1))
    forced: Any = {"provider": "openai", "service": {"cache": "skip"}}
    with pytest.raises(openai.InternalServerError) as failed:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, extra_body=forced)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, temperature=9)
    await gateway.state.usage.flush()
    for caught, status in ((failed, 502), (refused, 400)):
        request_id = caught.value.request_id
        assert request_id is not None
        lookup = functools.partial(usage.list_for_request, request_id=request_id)
        records = await gateway.state.db.run(lookup)
        assert [(r.endpoint, r.status) for r in records] == [("chat", status)]


@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_a_malformed_stream_event_is_an_error_never_a_gap(
    gateway: RunningGateway, client: openai.AsyncOpenAI, model: str
) -> None:
    """An upstream event that is not JSON was skipped: the answer arrived finished and
    marked a success, with that piece of its text missing. With the provider forced (no
    fallback) the client now gets an error, before or after the first chunk."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream(model), malformed=True, remaining=1))
    info = load_catalog().model(model)
    assert info is not None
    forced = {"provider": info.provider, "service": {"cache": "skip"}}
    received = []
    with trio.fail_after(5), pytest.raises(openai.APIError) as caught:
        async for chunk in await client.chat.completions.create(
            model=model, messages=HELLO, stream=True, extra_body=forced
        ):
            received.append(chunk)
    assert not any(c.choices and c.choices[0].finish_reason for c in received)
    assert caught.value.body["code"] == "provider_error"  # type: ignore[index]
