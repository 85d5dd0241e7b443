"""The engine owns the whole call (issue 32): whatever ends a stream, the engine writes
its one usage record and settles its hold, with the status of what ended it; the family
only says what was used. Driven through a running gateway's own engine, against a fake
provider."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting
from gateway.upstream.facts import new_facts
from gateway.upstream.options import ServiceOptions
from gateway.upstream.registry import ConfiguredProvider
from gateway.upstream.resolve import Target
from gateway.upstream.usage import usage_record
from providers.base import Provider
from providers.catalog import CostBreakdown
from providers.errors import StreamInterrupted, UpstreamTimeout
from providers.fake import FakeProvider
from providers.footprint import Footprint
from providers.types import ChatChunk, ChatRequest, Usage
from store.request_log import LoggedAttempt
from store.usage import UsageRecord, list_for_request
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


async def test_usage_record_fields(gateway: RunningGateway) -> None:
    """The record is built as one tuple in field order (issue 37): each field holds what
    its name says, told apart by values that differ from each other."""
    key = gateway.state.keyring.lookup(ADMIN_KEY)
    assert key is not None
    facts = new_facts("rerank", Principal(key), {"x-service-project": "proj"})
    facts = facts.planned("coding", "hash-1")
    facts.trail.model_requested = "asked-model"
    facts.trail.ttft_ms = 12.5
    facts.trail.attempts = (LoggedAttempt("openai", "gpt-4o-mini", 1, 1.0, 2.0, "won"),)
    target = Target(provider_id="openai", model_id="gpt-4o-mini", upstream_model="up", info=None)
    used = Usage(3, 4, audio_seconds=5.5, characters=6, pages=7, searches=8, bytes_stored=9)
    footprint = Footprint(0.25, 0.75, "low", 1.0, 1.1, "us-east", 300.0)
    accounting = Accounting(used, CostBreakdown(0.5, 0.5, 1.5), footprint, 42)
    record = usage_record(
        facts,
        target,
        accounting,
        status=502,
        error_code="provider_error",
        cache_hit=True,
        cache_savings_usd=2.5,
        request_log=True,
    )
    expected = {
        "request_id": facts.request_id,
        "key_id": key.id,
        "workspace_id": "default",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "endpoint": "rerank",
        "status": 502,
        "created_at": datetime.fromtimestamp(facts.created, UTC),
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "audio_seconds": 5.5,
        "characters": 6,
        "pages": 7,
        "searches": 8,
        "bytes_stored": 9,
        "cost_usd": 1.5,
        "latency_ms": 42,
        "energy_kwh": 0.25,
        "carbon_gco2e": 0.75,
        "error_code": "provider_error",
        "cache_hit": True,
        "cache_savings_usd": 2.5,
        "project": "proj",
        "team": None,
        "tags": (),
        "prompt_hash": "hash-1",
        "agent_session": None,
        "request_log": True,
        "model_requested": "asked-model",
        "ttft_ms": 12.5,
        "attempts": facts.trail.attempts,
        "trace_id": None,
        "body": None,
        "body_sealed": False,
    }
    assert record._asdict() == expected
    assert record == UsageRecord(**expected)  # the keyword constructor agrees
