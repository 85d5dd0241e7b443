"""Fallback chains, retries, hedging and circuit breakers, end to end.

Faults are injected into the simulators; the official client sees only successes, or
one well-formed error that says what was attempted.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.sim.core import Fault

HELLO: Any = [{"role": "user", "content": "Hello"}]


def fallback_of(answer: Any) -> dict[str, Any]:
    return dict((answer.model_extra or {})["_gateway"]["fallback"])


@pytest.mark.parametrize("stream", [False, True])
async def test_a_failing_primary_falls_back_invisibly(
    gateway: RunningGateway, client: openai.AsyncOpenAI, stream: bool
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=HELLO, stream=stream
    )
    if stream:
        chunks = [c async for c in raw.parse()]  # type: ignore[union-attr]
        final = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
        assert final.choices[0].finish_reason == "stop"
        fallback = fallback_of(final)
    else:
        answer = raw.parse()
        assert answer.choices[0].message.content
        fallback = fallback_of(answer)
    assert fallback["fallback_attempted"] is True
    assert fallback["fallback_result"] == "success"
    assert fallback["fallback_provider"] != "openai"
    assert [a["outcome"] for a in fallback["attempts"]] == ["failed", "won"]
    assert fallback["attempts"][0]["error"] == "provider_error"
    assert not raw.headers["x-service-model-used"].startswith("openai/")


async def test_explicit_fallbacks_are_tried_in_order(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=503))
    gateway.sim.faults.add(Fault(model="mistral-small-latest", status=500))
    answer = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=HELLO,
        extra_body={"service": {"fallbacks": ["mistral-small-latest", "gemini-2.5-flash"]}},
    )
    fallback = fallback_of(answer)
    assert [(a["model"], a["outcome"]) for a in fallback["attempts"]] == [
        ("gpt-4o-mini", "failed"),
        ("mistral-small-latest", "failed"),
        ("gemini-2.5-flash", "won"),
    ]
    assert answer.model == "gemini-2.5-flash"


@pytest.mark.parametrize(
    ("name", "reason"),
    [("gpt-17-ultra", "is not a known model"), ("text-embedding-3-small", "does not support chat")],
)
async def test_a_fallback_no_provider_could_serve_is_named(
    client: openai.AsyncOpenAI, name: str, reason: str
) -> None:
    """It was dropped without a word, so the client believed it had that fallback."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=HELLO,
            extra_body={"service": {"fallbacks": ["gemini-2.5-flash", name]}},
        )
    body: Any = caught.value.body
    assert (body["code"], body["param"], body["value"]) == (
        "invalid_fallback",
        "service.fallbacks",
        name,
    )
    assert reason in body["message"]


@pytest.mark.parametrize("stream", [False, True])
async def test_when_every_fallback_fails_the_error_says_what_was_tried(
    gateway: RunningGateway, client: openai.AsyncOpenAI, stream: bool
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="*", status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=stream)
    body: Any = caught.value.body
    assert caught.value.status_code == 502
    assert body["code"] == "provider_error"
    assert body["fallback_attempted"] is True and body["fallback_result"] == "failed"
    assert len(body["attempts"]) >= 2
    assert all(a["outcome"] == "failed" for a in body["attempts"])


async def test_a_client_error_is_not_retried_elsewhere(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=400, remaining=1))
    before = gateway.sim.stats.requests_total
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert gateway.sim.stats.requests_total == before + 1


async def test_retry_policy_retries_the_same_provider(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", status=500, remaining=1))
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, extra_body={"service": {"retry": {"max_attempts": 2}}}
    )
    assert answer.model == "gpt-4o-mini"
    meta = (answer.model_extra or {})["_gateway"]
    assert meta["rate_limiting"]["retry_attempts"] == 1
    assert [a["try"] for a in meta["fallback"]["attempts"]] == [1, 2]


async def test_hedging_starts_the_next_candidate_and_closes_the_loser(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    sim = gateway.sim
    assert sim is not None
    patched = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"hedge_after_ms": 100}}
    )
    assert patched.status_code == 200
    sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=10_000, remaining=1))
    disconnects = sim.stats.client_disconnects
    started = trio.current_time()
    with trio.fail_after(5):
        answer = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert trio.current_time() - started < 2  # far below the stalled primary's 10 s
    assert answer.model != "gpt-4o-mini"
    outcomes = [a["outcome"] for a in fallback_of(answer)["attempts"]]
    assert outcomes == ["cancelled", "won"]
    with trio.fail_after(5):
        while sim.stats.client_disconnects == disconnects:  # noqa: ASYNC110 (a counter)
            await trio.sleep(0.01)


async def test_repeated_failures_open_the_circuit(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    for _ in range(5):
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    path = "/openai/v1/chat/completions"
    before = sim.stats.by_path.get(path, 0)
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert sim.stats.by_path.get(path, 0) == before  # the open circuit skipped openai
    assert fallback_of(answer)["attempts"][0]["model"] != "gpt-4o-mini"


async def test_a_request_with_every_circuit_open_is_refused_and_logged(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """With the only candidate's circuit open, the answer is 503 provider_unavailable at
    once, and the usage log holds the refusal (the limits counted it, so a restart that
    reloads the count from the log must find it)."""
    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    forced: Any = {"provider": "openai"}  # no fallbacks: the chain is this one provider
    for _ in range(5):
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, extra_body=forced
            )
    path = "/openai/v1/chat/completions"
    before = sim.stats.by_path.get(path, 0)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, extra_body=forced)

    assert caught.value.status_code == 503
    assert sim.stats.by_path.get(path, 0) == before
    body: Any = caught.value.body
    assert body["code"] == "provider_unavailable" and body["provider"] == "openai"
    state = gateway.state
    await state.usage.flush()
    last = await state.db.run(
        lambda d: list(
            d.query("SELECT status, error_code FROM usage_records ORDER BY rowid DESC LIMIT 1")
        )
    )
    assert last == [{"status": 503, "error_code": "provider_unavailable"}]
