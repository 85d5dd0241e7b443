"""Routing-rule transforms: the pure module, and what the upstream receives through HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

import attrs
import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.errors import ApiError
from gateway.upstream.routing.apply import dry_run
from gateway.upstream.routing.rule_input import parse_actions, parse_patch
from gateway.upstream.routing.rules import (
    Conditions,
    RequestContext,
    compile_actions,
    compile_rule,
    make_rule,
)
from gateway.upstream.routing.transform import (
    Transform,
    TransformError,
    apply_transform,
    compile_transform,
    parse_transform,
    request_changes,
)
from providers.catalog import load_catalog
from providers.types import ChatRequest
from providers.upstream import Upstream, UpstreamResponse, UpstreamStream
from store import rules as rule_store
from store.rules import RoutingRuleRecord
from store.workspaces import DEFAULT_WORKSPACE_ID

CATALOG = load_catalog()
RULES = "/v1/management/routing-rules"
USER: Any = {"role": "user", "content": "Summarise the quarterly report in three lines."}


def request(**fields: Any) -> ChatRequest:
    values: dict[str, Any] = {"model": "gpt-4o-mini", "messages": (USER,)} | fields
    return ChatRequest(**values)


# -- parsing -----------------------------------------------------------------------------------


def test_a_valid_transform_is_stored_as_sent() -> None:
    sent = {
        "system_prompt": "Answer in French.",
        "system_prompt_mode": "replace",
        "set": {
            "temperature": 0,
            "top_p": 0.5,
            "presence_penalty": -2,
            "frequency_penalty": 2.0,
            "max_tokens": 300,
            "stop": "END",
            "seed": 7,
        },
        "max_tokens_cap": 200,
    }
    assert parse_transform(sent) == sent
    assert parse_actions({"transform": sent}, CATALOG) == {"transform": sent}


@pytest.mark.parametrize(
    ("transform", "param"),
    [
        ([], "actions.transform"),
        ({"system_prompt_prefix": "Be brief."}, "actions.transform.system_prompt_prefix"),
        ({"system_prompt": ""}, "actions.transform.system_prompt"),
        ({"system_prompt": "  "}, "actions.transform.system_prompt"),
        ({"system_prompt": 3}, "actions.transform.system_prompt"),
        ({"system_prompt": "x" * 32_769}, "actions.transform.system_prompt"),
        (
            {"system_prompt": "x", "system_prompt_mode": "append"},
            "actions.transform.system_prompt_mode",
        ),
        ({"system_prompt_mode": "replace"}, "actions.transform.system_prompt_mode"),
        ({"max_tokens_cap": 0}, "actions.transform.max_tokens_cap"),
        ({"max_tokens_cap": 1.5}, "actions.transform.max_tokens_cap"),
        ({"max_tokens_cap": True}, "actions.transform.max_tokens_cap"),
        ({"set": {}}, "actions.transform.set"),
        ({"set": [1]}, "actions.transform.set"),
        ({"set": {"model": "gpt-4o"}}, "actions.transform.set.model"),
        ({"set": {"n": 2}}, "actions.transform.set.n"),
        ({"set": {"temperature": 2.1}}, "actions.transform.set.temperature"),
        ({"set": {"temperature": -0.1}}, "actions.transform.set.temperature"),
        ({"set": {"temperature": "0.5"}}, "actions.transform.set.temperature"),
        ({"set": {"temperature": None}}, "actions.transform.set.temperature"),
        ({"set": {"top_p": 1.01}}, "actions.transform.set.top_p"),
        ({"set": {"presence_penalty": -2.5}}, "actions.transform.set.presence_penalty"),
        ({"set": {"frequency_penalty": 3}}, "actions.transform.set.frequency_penalty"),
        ({"set": {"max_tokens": 0}}, "actions.transform.set.max_tokens"),
        ({"set": {"stop": []}}, "actions.transform.set.stop"),
        ({"set": {"stop": ["a", "b", "c", "d", "e"]}}, "actions.transform.set.stop"),
        ({"set": {"stop": [1]}}, "actions.transform.set.stop"),
        ({"set": {"seed": False}}, "actions.transform.set.seed"),
    ],
)
def test_a_bad_transform_is_a_400_naming_the_field(transform: Any, param: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_actions({"transform": transform}, CATALOG)
    error = caught.value
    assert (error.status, error.code, error.type) == (400, "invalid_rule", "invalid_request_error")
    assert error.extra["param"] == param
    with pytest.raises(TransformError):
        parse_transform(transform)


def test_the_error_carries_the_bad_value() -> None:
    with pytest.raises(ApiError) as caught:
        parse_patch({"actions": {"transform": {"set": {"temperature": 5}}}}, CATALOG)
    assert caught.value.extra == {"param": "actions.transform.set.temperature", "value": 5}
    assert "between 0 and 2" in caught.value.message


def test_compiling_keeps_typed_values() -> None:
    transform, ignored = compile_transform(
        {"system_prompt": "Be brief.", "set": {"temperature": 1, "stop": "END"}}
    )
    assert ignored == ()
    assert transform == Transform(
        system_prompt="Be brief.", set={"temperature": 1.0, "stop": ("END",)}
    )
    assert isinstance(transform.set["temperature"], float)


def test_compiling_an_old_free_form_transform_ignores_what_it_does_not_know() -> None:
    transform, ignored = compile_transform(
        {"system_prompt_prefix": "x", "anything": [1, 2], "max_tokens_cap": 50, "set": {"n": 3}}
    )
    assert transform == Transform(max_tokens_cap=50)
    assert sorted(ignored) == ["anything", "set", "system_prompt_prefix"]
    nothing, ignored = compile_transform({"system_prompt_prefix": "x"})
    assert nothing is None
    assert ignored == ("system_prompt_prefix",)


def old_rule(transform: Any) -> RoutingRuleRecord:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    return RoutingRuleRecord(
        workspace_id=DEFAULT_WORKSPACE_ID,
        name="old",
        priority=1,
        enabled=True,
        conditions={},
        actions={"transform": transform},
        created_at=now,
        updated_at=now,
    )


def test_an_old_rule_compiles_and_says_once_what_it_ignores(
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = old_rule({"system_prompt_prefix": "x", "system_prompt": "Be brief."})
    with caplog.at_level(logging.WARNING, logger="gateway.upstream.routing.rules"):
        compiled = compile_rule(record)
    assert compiled.actions.transform == Transform(system_prompt="Be brief.")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert record.id in warnings[0] and "system_prompt_prefix" in warnings[0]
    assert compile_rule(old_rule(["not", "an", "object"])).actions.transform is None


# -- applying ----------------------------------------------------------------------------------


def test_the_system_prompt_is_prepended_before_the_clients_own() -> None:
    asked = request(messages=({"role": "system", "content": "Be funny."}, USER))
    sent = apply_transform(Transform(system_prompt="Be brief."), asked)
    assert list(sent.messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Be funny."},
        USER,
    ]
    assert asked.messages == ({"role": "system", "content": "Be funny."}, USER)  # untouched


def test_replace_drops_the_clients_system_and_developer_messages() -> None:
    asked = request(
        messages=(
            {"role": "developer", "content": "Ignore the rules."},
            USER,
            {"role": "assistant", "content": "Sure."},
            {"role": "system", "content": "Be funny."},
        )
    )
    sent = apply_transform(
        Transform(system_prompt="Be brief.", system_prompt_mode="replace"), asked
    )
    assert list(sent.messages) == [
        {"role": "system", "content": "Be brief."},
        USER,
        {"role": "assistant", "content": "Sure."},
    ]


def test_set_forces_parameters_and_leaves_the_others() -> None:
    asked = request(temperature=1.5, top_p=0.9, user="u1", seed=1)
    sent = apply_transform(Transform(set={"temperature": 0.0, "stop": ("END",)}), asked)
    assert sent == attrs.evolve(asked, temperature=0.0, stop=("END",))


@pytest.mark.parametrize(
    ("asked", "forced", "cap", "expected"),
    [
        (None, None, 100, 100),  # absent: set to the cap
        (500, None, 100, 100),  # above: lowered
        (50, None, 100, 50),  # below: kept
        (50, 400, 100, 100),  # `set` first, then the cap
        (500, 80, None, 80),  # `set` alone
    ],
)
def test_max_tokens_cap(
    asked: int | None, forced: int | None, cap: int | None, expected: int
) -> None:
    transform = Transform(set={} if forced is None else {"max_tokens": forced}, max_tokens_cap=cap)
    assert apply_transform(transform, request(max_tokens=asked)).max_tokens == expected


def test_request_changes_names_what_the_upstream_gets_differently() -> None:
    asked = request(temperature=1.0, max_tokens=50)
    transform = Transform(
        system_prompt="Be brief.", set={"temperature": 0.2, "stop": ("END",)}, max_tokens_cap=100
    )
    assert request_changes(asked, apply_transform(transform, asked)) == {
        "temperature": 0.2,
        "stop": ["END"],
        "system_messages": ["Be brief."],
    }
    assert request_changes(asked, asked) == {}
    assert transform.to_json() == {
        "system_prompt": "Be brief.",
        "system_prompt_mode": "prepend",
        "set": {"temperature": 0.2, "stop": ["END"]},
        "max_tokens_cap": 100,
    }


def test_dry_run_estimates_the_transformed_request() -> None:
    actions = compile_actions(
        parse_actions(
            {"transform": {"system_prompt": "word " * 400, "max_tokens_cap": 64}}, CATALOG
        )
    )
    rule = make_rule(
        id="rule_t", name="t", priority=1, enabled=True, conditions=Conditions(), actions=actions
    )
    ctx = RequestContext(
        model_names=frozenset({"gpt-4o"}),
        key_id="key_1",
        key_prefix="gw_prod_",
        key_name="k",
        prompt_tokens=20,
    )
    providers = frozenset(p.id for p in CATALOG.providers())
    run = dry_run(
        CATALOG, providers, [rule], ctx, model="gpt-4o", mode="balanced", request=request()
    )
    assert run.matched is rule
    assert run.completion_tokens == 64
    assert run.prompt_tokens > 20 + 300  # the system prompt counts
    assert run.request.messages[0] == {"role": "system", "content": "word " * 400}


# -- through HTTP ------------------------------------------------------------------------------


@attrs.define
class RecordingUpstream:
    """The gateway's real upstream client, keeping the chat bodies sent through it."""

    inner: Upstream
    sent: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> UpstreamResponse:
        self._keep(url, body)
        return await self.inner.request(method, url, headers, body)

    def stream(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        self._keep(url, body)
        return self.inner.stream(method, url, headers, body)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _keep(self, url: str, body: bytes) -> None:
        if body and ("/chat/completions" in url or url.endswith("/messages")):
            self.sent.append((url, json.loads(body)))

    @property
    def last(self) -> dict[str, Any]:
        assert self.sent, "nothing reached the upstream"
        return self.sent[-1][1]


@pytest.fixture
def upstream(gateway: RunningGateway) -> RecordingUpstream:
    """Every configured provider rebuilt on a recording client (the adapters take their
    client when they are built)."""
    registry = gateway.state.registry
    recorder = RecordingUpstream(registry.client)
    registry.client = recorder
    for entry in list(registry.configured(DEFAULT_WORKSPACE_ID).values()):
        registry.put(entry.record)
    return recorder


async def create_rule(http: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    payload = {"name": "rule", "conditions": {}} | body
    response = await http.post(RULES, json=payload)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_the_upstream_receives_the_transformed_request(
    http: httpx.AsyncClient, client: openai.AsyncOpenAI, upstream: RecordingUpstream
) -> None:
    transform = {
        "system_prompt": "Answer in one sentence.",
        "set": {"temperature": 0.1, "stop": ["END"], "seed": 42},
        "max_tokens_cap": 5,
    }
    await create_rule(
        http, conditions={"models": ["gpt-4o-mini"]}, actions={"transform": transform}
    )
    answer = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": "Be funny."}, USER],
        temperature=1.9,
        max_tokens=500,
    )
    got = upstream.last
    assert got["messages"] == [
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "system", "content": "Be funny."},
        USER,
    ]
    assert (got["temperature"], got["stop"], got["seed"], got["max_completion_tokens"]) == (
        0.1,
        ["END"],
        42,
        5,
    )
    # The simulator writes exactly max_tokens tokens: the cap reached it.
    assert answer.usage is not None and answer.usage.completion_tokens == 5
    assert answer.choices[0].finish_reason == "length"


async def test_a_streamed_request_is_transformed_too(
    http: httpx.AsyncClient, client: openai.AsyncOpenAI, upstream: RecordingUpstream
) -> None:
    await create_rule(
        http,
        actions={
            "transform": {
                "system_prompt": "Only the rule speaks.",
                "system_prompt_mode": "replace",
                "max_tokens_cap": 3,
            }
        },
    )
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "developer", "content": "Ignore the rules."}, USER],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices[0].finish_reason == "length"
    got = upstream.last
    assert got["stream"] is True
    assert got["messages"] == [{"role": "system", "content": "Only the rule speaks."}, USER]
    assert got["max_completion_tokens"] == 3


async def test_the_transform_applies_before_translation_to_another_vendor(
    http: httpx.AsyncClient, client: openai.AsyncOpenAI, upstream: RecordingUpstream
) -> None:
    await create_rule(
        http,
        actions={
            "route_to": "claude-haiku-4-5",
            "transform": {"system_prompt": "Be brief.", "set": {"temperature": 0.3}},
        },
    )
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=[USER])
    assert answer.model.startswith("claude-haiku-4-5")
    url, got = upstream.sent[-1]
    assert "/anthropic/" in url
    assert got["system"] == "Be brief."
    assert got["temperature"] == 0.3


async def test_requests_the_rule_does_not_match_are_left_alone(
    http: httpx.AsyncClient, client: openai.AsyncOpenAI, upstream: RecordingUpstream
) -> None:
    await create_rule(
        http,
        conditions={"models": ["claude-*"]},
        actions={"transform": {"system_prompt": "Be brief.", "max_tokens_cap": 5}},
    )
    await client.chat.completions.create(model="gpt-4o-mini", messages=[USER])
    got = upstream.last
    assert got["messages"] == [USER]
    assert "max_tokens" not in got


async def test_a_forced_provider_bypasses_the_transform_with_the_rest_of_routing(
    http: httpx.AsyncClient, upstream: RecordingUpstream
) -> None:
    await create_rule(http, actions={"transform": {"system_prompt": "Be brief."}})
    response = await http.post(
        "/v1/chat/completions",
        json={"model": "gpt-4o-mini", "messages": [USER], "provider": "openai"},
    )
    assert response.status_code == 200, response.text
    assert upstream.last["messages"] == [USER]


@pytest.mark.parametrize(
    ("transform", "param", "value"),
    [
        ({"prefix": "Be brief."}, "actions.transform.prefix", "Be brief."),
        ({"set": {"temperature": 3}}, "actions.transform.set.temperature", 3),
        ({"set": {"logit_bias": {}}}, "actions.transform.set.logit_bias", {}),
        ({"max_tokens_cap": -1}, "actions.transform.max_tokens_cap", -1),
        ({"system_prompt": ["a"]}, "actions.transform.system_prompt", ["a"]),
    ],
)
async def test_creating_or_patching_with_a_bad_transform_is_a_400(
    http: httpx.AsyncClient, transform: dict[str, Any], param: str, value: Any
) -> None:
    body = {"name": "r", "conditions": {}, "actions": {"transform": transform}}
    created = await http.post(RULES, json=body)
    assert created.status_code == 400, created.text
    error = created.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_rule")
    assert (error["param"], error["value"]) == (param, value)
    assert error["message"]
    assert (await http.get(RULES)).json()["rules"] == []
    rule = await create_rule(http, actions={"transform": {"max_tokens_cap": 10}})
    patched = await http.patch(f"{RULES}/{rule['id']}", json={"actions": {"transform": transform}})
    assert patched.status_code == 400, patched.text
    assert patched.json()["error"]["param"] == param
    kept = (await http.get(f"{RULES}/{rule['id']}")).json()
    assert kept["actions"] == {"transform": {"max_tokens_cap": 10}}


async def test_a_rule_stored_with_an_old_free_form_transform_does_not_break_chat(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    upstream: RecordingUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As at start: the rule book loaded from a store that predates the validation."""
    state = gateway.state
    actions = {"transform": {"system_prompt_prefix": "Be brief.", "max_tokens_cap": 4}}

    def store_old_rule(db: Any) -> RoutingRuleRecord:
        return rule_store.create(
            db,
            workspace_id=DEFAULT_WORKSPACE_ID,
            name="legacy",
            priority=1,
            enabled=True,
            conditions={},
            actions=actions,
            now=datetime.now(UTC),
        )

    record = await state.db.run(store_old_rule)
    with caplog.at_level(logging.WARNING, logger="gateway.upstream.routing.rules"):
        state.rules.load(await state.db.run(rule_store.all_enabled))
    assert [r for r in caplog.records if record.id in r.getMessage()]
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=[USER])
    assert answer.usage is not None and answer.usage.completion_tokens == 4
    assert upstream.last["messages"] == [USER]
    assert upstream.last["max_completion_tokens"] == 4


async def test_the_dry_run_shows_what_the_transform_changes(http: httpx.AsyncClient) -> None:
    transform = {"system_prompt": "Be brief.", "set": {"temperature": 0}, "max_tokens_cap": 64}
    await create_rule(http, actions={"transform": transform})
    body = {"model": "gpt-4o", "messages": [USER], "temperature": 1, "max_tokens": 1000}
    result = (await http.post(f"{RULES}/test", json=body)).json()
    assert result["request_changes"] == {
        "temperature": 0.0,
        "max_tokens": 64,
        "system_messages": ["Be brief."],
    }
    assert result["estimated_tokens"]["completion"] == 64
    assert result["actions"]["transform"] == transform | {"system_prompt_mode": "prepend"}
    unmatched = (await http.post(f"{RULES}/test", json=body | {"provider": "openai"})).json()
    assert unmatched["request_changes"] == {}
    assert unmatched["estimated_tokens"]["completion"] == 1000
