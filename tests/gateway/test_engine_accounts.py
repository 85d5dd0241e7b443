"""The engine owns the whole call (issue 32): whatever ends a stream, the engine writes
its one usage record and settles its hold, with the status of what ended it; the family
only says what was used. Driven through a running gateway's own engine, against a fake
provider."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.facts import new_facts
from gateway.upstream.options import ServiceOptions
from gateway.upstream.registry import ConfiguredProvider
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.errors import StreamInterrupted, UpstreamTimeout
from providers.fake import FakeProvider
from providers.types import ChatChunk, ChatRequest, Usage
from store.usage import list_for_request
from tests.gateway.conftest import ADMIN_KEY

USED = Usage(7, 11)


async def words(request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
    yield ChatChunk(content="one ")
    yield ChatChunk(content="two")


def install(gateway: RunningGateway) -> FakeProvider:
    fake = FakeProvider("openai", stream=words)
    configured = gateway.state.registry.configured("default")
    assert isinstance(configured, dict)
    configured["openai"] = ConfiguredProvider(configured["openai"].record, fake)
    return fake


def opener(adapter: Provider, target: Target) -> AbstractAsyncContextManager[Any]:
    return adapter.chat_stream(ChatRequest(model=target.upstream_model, messages=()))


async def record_of(gateway: RunningGateway, request_id: str) -> tuple[int, str | None, int]:
    await gateway.state.usage.flush()
    (record,) = await gateway.state.db.run(lambda d: list_for_request(d, request_id))
    return record.status, record.error_code, record.prompt_tokens + record.completion_tokens


@asynccontextmanager
async def opened(gateway: RunningGateway) -> AsyncGenerator[Any, None]:
    """One stream through the engine, its facts and hold as a family would make them."""
    key = gateway.state.keyring.lookup(ADMIN_KEY)
    assert key is not None
    principal = Principal(key)
    engine = gateway.state.engine
    facts = new_facts("chat", principal, {})
    plan = engine.plan_named(
        principal,
        model="gpt-4o-mini",
        provider="openai",
        fallbacks=(),
        capability="chat",
        service=ServiceOptions(),
    )
    hold = await gateway.state.admission.admit(
        principal, ServiceOptions(), prompt_tokens=7, max_tokens=11
    )
    with hold:
        async with engine.open_stream(facts, plan, opener, hold=hold, timeout_s=5) as stream:
            yield facts, stream, hold


async def test_a_finished_stream_is_priced_settled_and_recorded(gateway: RunningGateway) -> None:
    install(gateway)
    async with opened(gateway) as (facts, stream, hold):
        accounting = stream.finished(USED)
        assert accounting.usage == USED and accounting.cost.total > 0
        assert hold.usage == USED  # the key is charged what was used, not the estimate
    assert await record_of(gateway, facts.request_id) == (200, None, 18)


async def test_a_failure_after_the_head_is_mapped_and_recorded(gateway: RunningGateway) -> None:
    install(gateway)
    async with opened(gateway) as (facts, stream, _):
        stream.metered = USED
        error = stream.failed(StreamInterrupted("openai", "connection reset"))
        assert (error.status, error.code) == (502, "provider_error")
    assert await record_of(gateway, facts.request_id) == (502, "provider_error", 18)


async def test_a_provider_error_leaving_the_block_is_mapped_there(
    gateway: RunningGateway,
) -> None:
    install(gateway)
    with pytest.raises(UpstreamTimeout):
        async with opened(gateway) as (facts, stream, _):
            stream.metered = USED
            raise UpstreamTimeout("openai", "the stream went silent", timeout_ms=1000)
    assert await record_of(gateway, facts.request_id) == (504, "provider_timeout", 18)


async def test_a_client_that_leaves_is_a_499_with_what_was_used(gateway: RunningGateway) -> None:
    fake = install(gateway)
    with trio.CancelScope() as scope:
        async with opened(gateway) as (facts, stream, _):
            stream.metered = USED
            scope.cancel()
            await trio.sleep_forever()
    assert await record_of(gateway, facts.request_id) == (499, "client_disconnected", 18)
    assert fake.open_streams == 0  # and the upstream was closed


async def test_an_api_error_leaving_the_block_is_recorded_as_such(
    gateway: RunningGateway,
) -> None:
    install(gateway)
    with pytest.raises(ApiError):
        async with opened(gateway) as (facts, _stream, _hold):
            raise ApiError(400, "invalid_value", "a check after the head failed")
    assert await record_of(gateway, facts.request_id) == (400, "invalid_value", 0)


@pytest.mark.parametrize("how", ["past its deadline", "its own TooSlowError"])
async def test_a_call_that_takes_too_long_is_a_provider_timeout(
    gateway: RunningGateway, how: str
) -> None:
    """The attempt's deadline (a cancel scope since issue 37, `fail_after` before) and a
    TooSlowError of the operation's own both end the call as `provider_timeout`, a 504
    with its record, never as an error of the gateway's."""
    install(gateway)
    key = gateway.state.keyring.lookup(ADMIN_KEY)
    assert key is not None
    principal = Principal(key)
    engine = gateway.state.engine
    facts = new_facts("chat", principal, {})
    plan = engine.plan_named(
        principal,
        model="gpt-4o-mini",
        provider="openai",
        fallbacks=(),
        capability="chat",
        service=ServiceOptions(),
    )

    async def operation(adapter: Provider, target: Target) -> str:
        if how == "past its deadline":
            await trio.sleep_forever()
        raise trio.TooSlowError

    with pytest.raises(ApiError) as raised:
        await engine.call(facts, plan, operation, hold=None, timeout_s=0.05, meter=lambda _: USED)
    assert (raised.value.status, raised.value.code) == (504, "provider_timeout")
    assert await record_of(gateway, facts.request_id) == (504, "provider_timeout", 0)


def planned(gateway: RunningGateway, fallbacks: tuple[str, ...] = ()) -> tuple[Any, Any, Any]:
    """The engine, the facts and the plan of one chat call (gpt-4o-mini first)."""
    key = gateway.state.keyring.lookup(ADMIN_KEY)
    assert key is not None
    principal = Principal(key)
    engine = gateway.state.engine
    plan = engine.plan_named(
        principal,
        model="gpt-4o-mini",
        provider=None if fallbacks else "openai",
        fallbacks=fallbacks,
        capability="chat",
        service=ServiceOptions(),
    )
    return engine, new_facts("chat", principal, {}), plan


async def test_a_lone_call_that_wins_is_booked_as_the_race_did(gateway: RunningGateway) -> None:
    """The first candidate alone is called without the race's machinery (issue 37): the
    answer still carries its one won attempt, the trail the request log and the metrics
    read, the time to the first result, and the provider's health counts the win."""
    install(gateway)
    engine, facts, plan = planned(gateway)
    before = gateway.state.health.figures("default", "openai").samples

    async def operation(adapter: Provider, target: Target) -> str:
        await trio.sleep(0.01)
        return "answer"

    called = await engine.call(facts, plan, operation, hold=None, timeout_s=5, meter=lambda _: USED)
    assert called.value == "answer" and not called.fell_back and called.retries == 0
    (summary,) = called.attempts
    assert summary["outcome"] == "won" and summary["try"] == 1 and summary["error"] is None
    (logged,) = facts.trail.attempts
    assert (logged.provider, logged.model, logged.outcome) == ("openai", "gpt-4o-mini", "won")
    assert logged.duration_ms is not None and logged.duration_ms >= 10
    assert facts.trail.ttft_ms is not None and facts.trail.ttft_ms >= logged.duration_ms
    assert gateway.state.health.figures("default", "openai").samples == before + 1
    assert await record_of(gateway, facts.request_id) == (200, None, 18)


async def test_a_lone_call_that_fails_falls_back_through_the_race(
    gateway: RunningGateway,
) -> None:
    """A lone first candidate that fails retryably hands its failed try to the race,
    which goes on to the fallback: both attempts reported, the fallback's answer served."""
    install(gateway)
    engine, facts, plan = planned(gateway, fallbacks=("gpt-4o",))
    assert len(plan.targets) >= 2

    async def operation(adapter: Provider, target: Target) -> str:
        if target.model_id == "gpt-4o-mini":
            raise UpstreamTimeout("openai", "slow", timeout_ms=10)
        return target.model_id

    called = await engine.call(facts, plan, operation, hold=None, timeout_s=5, meter=lambda _: USED)
    assert called.value == "gpt-4o" and called.fell_back
    assert [a["outcome"] for a in called.attempts] == ["failed", "won"]
    assert [a.outcome for a in facts.trail.attempts] == ["failed", "won"]
    assert facts.trail.attempts[0].error == "provider_timeout"


async def test_a_client_leaving_a_lone_call_is_a_499(gateway: RunningGateway) -> None:
    """Cancelled while the lone first candidate runs (the client went away): the
    upstream call is cancelled at once, the 499 recorded, the cancellation propagates."""
    install(gateway)
    engine, facts, plan = planned(gateway)
    cancelled = False

    async def operation(adapter: Provider, target: Target) -> str:
        nonlocal cancelled
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled = True
            raise
        raise AssertionError("unreachable")

    with trio.move_on_after(0.05) as scope:
        await engine.call(facts, plan, operation, hold=None, timeout_s=5, meter=lambda _: USED)
    assert scope.cancelled_caught and cancelled
    assert await record_of(gateway, facts.request_id) == (499, "client_disconnected", 0)
