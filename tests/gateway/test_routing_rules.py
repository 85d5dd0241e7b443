"""Routing rules without I/O: matching, validation, the rule book, applying a rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.platform.errors import ApiError
from gateway.upstream.routing.apply import dry_run, routed_resolution
from gateway.upstream.routing.book import RuleBook
from gateway.upstream.routing.context import chat_context, model_names, request_metadata
from gateway.upstream.routing.rule_input import (
    next_enabled,
    parse_actions,
    parse_conditions,
    parse_create,
    parse_patch,
)
from gateway.upstream.routing.rules import (
    RequestContext,
    Rule,
    compile_actions,
    compile_conditions,
    explain,
    make_rule,
    match_rule,
    pattern_matches,
)
from providers.catalog import load_catalog
from providers.types import ChatRequest
from store import keys
from store.rules import RoutingRuleRecord

CATALOG = load_catalog()
ALL_PROVIDERS = frozenset(p.id for p in CATALOG.providers())
NOON_UTC = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)  # a Monday; Paris is UTC+1 in March


def ctx(**overrides: Any) -> RequestContext:
    values: dict[str, Any] = {
        "model_names": model_names(CATALOG, overrides.pop("model", "gpt-4o")),
        "key_id": "key_abc123",
        "key_prefix": "gw_prod_",
        "key_name": "ci-runner",
        "headers": {},
        "metadata": {},
        "now": NOON_UTC,
        "prompt_tokens": 100,
    }
    values.update(overrides)
    return RequestContext(**values)


def rule(
    conditions: dict[str, Any],
    *,
    priority: int = 10,
    enabled: bool = True,
    id: str = "rule_x",
    actions: dict[str, Any] | None = None,
) -> Rule:
    return make_rule(
        id=id,
        name=id,
        priority=priority,
        enabled=enabled,
        conditions=compile_conditions(parse_conditions(conditions)),
        actions=compile_actions(parse_actions(actions or {"route_to": "gpt-4o-mini"}, CATALOG)),
    )


def matches(conditions: dict[str, Any], **context: Any) -> bool:
    return match_rule([rule(conditions)], ctx(**context)) is not None


# -- conditions, one table per kind ----------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("gpt-4o", "gpt-4o", True),
        ("gpt-4o", "gpt-4o-mini", False),
        ("gpt-4o*", "gpt-4o-mini", True),
        ("gpt-4o*", "gpt-4", False),
        ("*", "anything", True),
        ("gw_prod_*", "gw_prod_", True),
    ],
)
def test_pattern_matches(pattern: str, value: str, expected: bool) -> None:
    assert pattern_matches(pattern, value) is expected


def test_no_conditions_match_every_request() -> None:
    assert matches({})


@pytest.mark.parametrize(
    ("patterns", "model", "expected"),
    [
        (["gpt-4o"], "gpt-4o", True),
        (["gpt-4o"], "gpt-4o-2024-08-06", True),  # an alias names the same model
        (["gpt-4o-2024-08-06"], "gpt-4o", True),
        (["gpt-4o"], "gpt-4o-mini", False),
        (["claude-*", "gemini-*"], "gemini-2.5-flash", True),
        (["claude-*"], "gpt-4o", False),
        (["auto"], "auto", True),
        (["my-own-model"], "my-own-model", True),  # not in the catalog: matched as sent
    ],
)
def test_models_condition(patterns: list[str], model: str, expected: bool) -> None:
    assert matches({"models": patterns}, model=model) is expected


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (["key_abc123"], True),  # key id
        (["key_abc*"], True),
        (["gw_prod_*"], True),  # key prefix: every production key
        (["gw_*"], True),
        (["gw_dev_*"], False),
        (["ci-runner"], True),  # key name
        (["ci-*"], True),
        (["key_other", "gw_admin_*"], False),
        (["gw_prod"], False),  # exact pattern, no wildcard
    ],
)
def test_api_keys_condition(patterns: list[str], expected: bool) -> None:
    assert matches({"api_keys": patterns}) is expected


@pytest.mark.parametrize(
    ("condition", "headers", "expected"),
    [
        ({"X-Env": "prod"}, {"x-env": "prod"}, True),
        ({"x-env": "prod"}, {"X-ENV": "prod"}, True),  # names are case-insensitive
        ({"X-Env": "prod"}, {"x-env": "Prod"}, False),  # values are exact
        ({"X-Env": "prod"}, {}, False),
        ({"X-Env": "*"}, {"x-env": "anything"}, True),
        ({"X-Env": "*"}, {}, False),
        ({"X-Team": "ml-*"}, {"x-team": "ml-research"}, True),
        ({"X-Team": ["a", "b"]}, {"x-team": "b"}, True),
        ({"X-Team": ["a", "b"]}, {"x-team": "c"}, False),
        ({"X-Env": "prod", "X-Team": "a"}, {"x-env": "prod"}, False),  # all must hold
    ],
)
def test_headers_condition(
    condition: dict[str, Any], headers: dict[str, str], expected: bool
) -> None:
    assert matches({"headers": condition}, headers=headers) is expected


@pytest.mark.parametrize(
    ("condition", "metadata", "expected"),
    [
        ({"tier": "gold"}, {"tier": "gold"}, True),
        ({"tier": "gold"}, {"tier": "silver"}, False),
        ({"tier": "gold"}, {}, False),
        ({"tier": ["gold", "platinum"]}, {"tier": "platinum"}, True),
        ({"region": "eu-*"}, {"region": "eu-west-1"}, True),
        ({"region": "eu-*"}, {"region": 3}, False),
        ({"priority": 1}, {"priority": 1}, True),
        ({"priority": 1}, {"priority": 1.0}, True),
        ({"priority": 1}, {"priority": True}, False),  # true never equals 1
        ({"beta": True}, {"beta": True}, True),
        ({"beta": True}, {"beta": 1}, False),
        ({"beta": True, "tier": "gold"}, {"beta": True}, False),
    ],
)
def test_metadata_condition(
    condition: dict[str, Any], metadata: dict[str, Any], expected: bool
) -> None:
    assert matches({"metadata": condition}, metadata=metadata) is expected


def utc(hour: int, minute: int = 0, day: int = 3) -> datetime:
    return datetime(2025, 3, day, hour, minute, tzinfo=UTC)


PARIS_OFFICE = {"start": "09:00", "end": "17:00", "timezone": "Europe/Paris"}
NIGHT_UTC = {"start": "22:00", "end": "06:00"}


@pytest.mark.parametrize(
    ("window", "now", "expected"),
    [
        (PARIS_OFFICE, utc(8, 0), True),  # 09:00 in Paris (UTC+1): start is inclusive
        (PARIS_OFFICE, utc(7, 59), False),
        (PARIS_OFFICE, utc(15, 59), True),
        (PARIS_OFFICE, utc(16, 0), False),  # 17:00 in Paris: end is exclusive
        # Summer time: Paris is UTC+2, the same window starts at 07:00 UTC.
        (PARIS_OFFICE, datetime(2025, 7, 1, 7, 0, tzinfo=UTC), True),
        (PARIS_OFFICE, datetime(2025, 7, 1, 15, 0, tzinfo=UTC), False),
        (NIGHT_UTC, utc(23, 30), True),  # crosses midnight
        (NIGHT_UTC, utc(0, 0), True),
        (NIGHT_UTC, utc(5, 59), True),
        (NIGHT_UTC, utc(6, 0), False),
        (NIGHT_UTC, utc(21, 59), False),
        (NIGHT_UTC, utc(12, 0), False),
        # An instant given in another offset is read in the rule's zone all the same.
        (
            {"start": "09:00", "end": "10:00", "timezone": "Asia/Tokyo"},
            datetime(2025, 3, 3, 9, 30, tzinfo=UTC) - timedelta(hours=9),
            True,
        ),
        (
            {"start": "23:00", "end": "01:00", "timezone": "America/New_York"},
            utc(4, 30),  # 23:30 the day before in New York (UTC-5)
            True,
        ),
    ],
)
def test_time_range_condition(window: dict[str, str], now: datetime, expected: bool) -> None:
    assert matches({"time_range": window}, now=now) is expected


@pytest.mark.parametrize(
    ("bounds", "tokens", "expected"),
    [
        ({"min": 1000}, 999, False),
        ({"min": 1000}, 1000, True),
        ({"max": 50}, 50, True),
        ({"max": 50}, 51, False),
        ({"min": 10, "max": 20}, 15, True),
        ({"min": 10, "max": 20}, 21, False),
    ],
)
def test_token_estimate_condition(bounds: dict[str, int], tokens: int, expected: bool) -> None:
    assert matches({"token_estimate": bounds}, prompt_tokens=tokens) is expected


def test_every_condition_of_a_rule_must_hold() -> None:
    conditions = {"models": ["gpt-4o"], "api_keys": ["gw_prod_*"], "token_estimate": {"min": 50}}
    assert matches(conditions)
    assert not matches(conditions, prompt_tokens=10)
    assert not matches(conditions, key_prefix="gw_dev_")


def test_context_refuses_a_naive_time() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ctx(now=datetime(2025, 1, 1, 12, 0))


# -- order ------------------------------------------------------------------------------------


def test_lowest_priority_wins_whatever_the_input_order() -> None:
    late = rule({}, priority=20, id="rule_late")
    early = rule({"models": ["gpt-4o"]}, priority=5, id="rule_early")
    assert match_rule([late, early], ctx()) is early
    assert match_rule([late, early], ctx(model="gpt-4o-mini")) is late


def test_disabled_rules_are_skipped() -> None:
    off = rule({}, priority=1, enabled=False, id="rule_off")
    on = rule({}, priority=2, id="rule_on")
    assert match_rule([off, on], ctx()) is on
    assert match_rule([off], ctx()) is None
    assert match_rule([], ctx()) is None


def test_explain_stops_at_the_match_and_shows_each_condition() -> None:
    miss = rule({"models": ["claude-*"], "token_estimate": {"min": 1}}, priority=1, id="rule_m")
    hit = rule({"api_keys": ["gw_prod_*"]}, priority=2, id="rule_h")
    never = rule({}, priority=3, id="rule_n")
    trail = explain([never, hit, miss], ctx())
    assert [(e.rule.id, e.matched) for e in trail] == [("rule_m", False), ("rule_h", True)]
    assert trail[0].conditions == {"models": False, "token_estimate": True}


# -- validation -------------------------------------------------------------------------------


def error_of(fn: Any, *args: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        fn(*args)
    return caught.value


@pytest.mark.parametrize(
    ("conditions", "param"),
    [
        ([], "conditions"),
        ({"model": ["gpt-4o"]}, "conditions.model"),  # unknown key
        ({"models": []}, "conditions.models"),
        ({"models": "gpt-4o"}, "conditions.models"),
        ({"models": ["gpt-*-mini"]}, "conditions.models[0]"),  # * only at the end
        ({"api_keys": [3]}, "conditions.api_keys[0]"),
        ({"headers": {}}, "conditions.headers"),
        ({"headers": {"bad header": "x"}}, "conditions.headers"),
        ({"headers": {"X-A": 1}}, "conditions.headers.X-A"),
        ({"headers": {"X-A": "1", "x-a": "2"}}, "conditions.headers"),
        ({"metadata": {"a": {"nested": 1}}}, "conditions.metadata.a"),
        ({"metadata": {"a": None}}, "conditions.metadata.a"),
        ({"time_range": {"start": "9:00", "end": "17:00"}}, "conditions.time_range.start"),
        ({"time_range": {"start": "09:00", "end": "24:00"}}, "conditions.time_range.end"),
        ({"time_range": {"start": "09:00"}}, "conditions.time_range.end"),
        ({"time_range": {"start": "09:00", "end": "09:00"}}, "conditions.time_range"),
        (
            {"time_range": {"start": "09:00", "end": "17:00", "timezone": "Mars/Olympus"}},
            "conditions.time_range.timezone",
        ),
        (
            {"time_range": {"start": "09:00", "end": "17:00", "timezone": "../etc/passwd"}},
            "conditions.time_range.timezone",
        ),
        (
            {"time_range": {"start": "09:00", "end": "17:00", "days": []}},
            "conditions.time_range.days",
        ),
        ({"token_estimate": {}}, "conditions.token_estimate"),
        ({"token_estimate": {"min": -1}}, "conditions.token_estimate.min"),
        ({"token_estimate": {"min": True}}, "conditions.token_estimate.min"),
        ({"token_estimate": {"min": 5, "max": 4}}, "conditions.token_estimate"),
    ],
)
def test_invalid_conditions_are_400_naming_the_param(conditions: Any, param: str) -> None:
    error = error_of(parse_conditions, conditions)
    assert (error.status, error.code, error.extra["param"]) == (400, "invalid_rule", param)


@pytest.mark.parametrize(
    ("actions", "status", "param"),
    [
        ({}, 400, "actions"),
        ("gpt-4o", 400, "actions"),
        ({"route": "gpt-4o"}, 400, "actions.route"),
        ({"route_to": 3}, 400, "actions.route_to"),
        ({"route_to": "gpt-9"}, 422, "actions.route_to"),
        ({"route_to": "text-embedding-3-small"}, 422, "actions.route_to"),  # not a chat model
        ({"fallbacks": ["gpt-4o", "nope"]}, 422, "actions.fallbacks[1]"),
        ({"fallbacks": "gpt-4o"}, 400, "actions.fallbacks"),
        ({"fallbacks": ["gpt-4o"] * 11}, 400, "actions.fallbacks"),
        ({"retry": {"max_attempts": 0}}, 400, "actions.retry.max_attempts"),
        ({"retry": {"max_attempts": 11}}, 400, "actions.retry.max_attempts"),
        ({"retry": {"initial_delay_ms": 60_001}}, 400, "actions.retry.initial_delay_ms"),
        ({"retry": {"backoff": 2}}, 400, "actions.retry.backoff"),
        ({"cache": {"enabled": "yes"}}, 400, "actions.cache.enabled"),
        ({"cache": {"ttl_seconds": 0}}, 400, "actions.cache.ttl_seconds"),
        ({"cache": {"ttl_seconds": 86_401}}, 400, "actions.cache.ttl_seconds"),
        ({"transform": []}, 400, "actions.transform"),
        (
            {"transform": {"system_prompt_prefix": "x"}},
            400,
            "actions.transform.system_prompt_prefix",
        ),
    ],
)
def test_invalid_actions(actions: Any, status: int, param: str) -> None:
    error = error_of(parse_actions, actions, CATALOG)
    assert (error.status, error.extra["param"]) == (status, param)
    assert error.code == ("invalid_model" if status == 422 else "invalid_rule")


def test_unknown_model_error_names_it() -> None:
    error = error_of(parse_actions, {"fallbacks": ["gpt-4o", "gpt-9000"]}, CATALOG)
    assert error.extra["model"] == "gpt-9000"
    assert "gpt-9000" in error.message


def test_actions_are_normalised_with_defaults() -> None:
    parsed = parse_actions(
        {
            "route_to": "gpt-4o-2024-08-06",
            "fallbacks": ["claude-haiku-4-5", "claude-haiku-4-5", "gemini-2.5-flash"],
            "retry": {"max_attempts": 5},
            "cache": {},
            "transform": {"system_prompt": "Be brief.", "set": {"temperature": 0}},
        },
        CATALOG,
    )
    assert parsed == {
        "route_to": "gpt-4o-2024-08-06",
        "fallbacks": ["claude-haiku-4-5", "gemini-2.5-flash"],
        "retry": {"max_attempts": 5, "initial_delay_ms": 250},
        "cache": {"enabled": True, "ttl_seconds": 3600},
        "transform": {"system_prompt": "Be brief.", "set": {"temperature": 0}},
    }


def test_time_range_defaults_to_utc() -> None:
    parsed = parse_conditions({"time_range": {"start": "22:00", "end": "06:00"}})
    assert parsed["time_range"]["timezone"] == "UTC"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"conditions": {}, "actions": {"cache": {}}}, "name"),
        ({"name": " ", "conditions": {}, "actions": {"cache": {}}}, "name"),
        ({"name": "r", "actions": {"cache": {}}}, "conditions"),
        ({"name": "r", "conditions": {}}, "actions"),
        ({"name": "r", "conditions": {}, "actions": {"cache": {}}, "priority": -1}, "priority"),
        ({"name": "r", "conditions": {}, "actions": {"cache": {}}, "priority": "1"}, "priority"),
        ({"name": "r", "conditions": {}, "actions": {"cache": {}}, "enabled": 1}, "enabled"),
        ({"name": "r", "conditions": {}, "actions": {"cache": {}}, "color": "red"}, "color"),
    ],
)
def test_invalid_create_bodies(body: dict[str, Any], param: str) -> None:
    error = error_of(parse_create, body, CATALOG)
    assert (error.status, error.code, error.extra["param"]) == (400, "invalid_rule", param)


def test_create_defaults_and_read_only_fields_are_ignored() -> None:
    spec = parse_create(
        {
            "id": "rule_ignored",
            "created_at": "2020-01-01T00:00:00Z",
            "name": " cheap nights ",
            "conditions": {},
            "actions": {"route_to": "gpt-4o-mini"},
        },
        CATALOG,
    )
    assert (spec.name, spec.priority, spec.enabled) == ("cheap nights", None, True)


def test_patch_needs_a_change() -> None:
    assert error_of(parse_patch, {}, CATALOG).code == "invalid_rule"
    assert parse_patch({"enabled": False, "priority": 3}, CATALOG) == {
        "enabled": False,
        "priority": 3,
    }


@pytest.mark.parametrize(
    ("current", "trigger", "after"),
    [
        (True, "disable", False),
        (False, "enable", True),
        (True, "enable", True),
        (False, "disable", False),
    ],
)
def test_state_table(current: bool, trigger: str, after: bool) -> None:
    assert next_enabled(current, trigger) is after


# -- the rule book ----------------------------------------------------------------------------


def record(id: str, priority: int, enabled: bool = True, ws: str = "default") -> RoutingRuleRecord:
    return RoutingRuleRecord(
        id=id,
        workspace_id=ws,
        name=id,
        priority=priority,
        enabled=enabled,
        conditions={"models": ["gpt-4o"]},
        actions={"route_to": "gpt-4o-mini"},
        created_at=NOON_UTC,
        updated_at=NOON_UTC,
    )


def test_rule_book_keeps_enabled_rules_in_order_per_workspace() -> None:
    book = RuleBook()
    book.load(
        [
            record("b", 20),
            record("a", 10),
            record("off", 5, enabled=False),
            record("x", 1, ws="ws2"),
        ]
    )
    assert [r.id for r in book.enabled("default")] == ["a", "b"]
    assert [r.id for r in book.enabled("ws2")] == ["x"]
    book.put(record("c", 15))
    book.put(record("a", 30))  # a change of priority moves it
    assert [r.id for r in book.enabled("default")] == ["c", "b", "a"]
    book.put(record("b", 20, enabled=False))  # disabling takes it out
    assert [r.id for r in book.enabled("default")] == ["c", "a"]
    book.remove("default", "c")
    book.remove("default", "missing")
    assert [r.id for r in book.enabled("default")] == ["a"]
    book.remove("default", "a")
    assert book.enabled("default") == ()
    assert book.enabled("nowhere") == ()


# -- context and application ------------------------------------------------------------------


def test_chat_context_reads_the_body_and_the_key() -> None:
    key = keys.new_record(
        "gw_prod_" + "a" * 40,
        workspace_id="default",
        name="backend",
        kind="prod",
        permissions=["chat"],
        now=NOON_UTC,
    )
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "x" * 400}],
        "metadata": {"tier": "gold"},
        "service": {"tags": {"tier": "silver", "team": "ml"}},
    }
    context = chat_context(CATALOG, key, body, {"X-Env": "prod"}, NOON_UTC)
    assert "gpt-4o-mini-2024-07-18" in context.model_names
    assert (context.key_id, context.key_prefix, context.key_name) == (key.id, "gw_prod_", "backend")
    assert context.headers == {"x-env": "prod"}
    assert context.metadata == {"tier": "gold", "team": "ml"}  # metadata over service.tags
    assert context.prompt_tokens == 104
    assert request_metadata({"metadata": "nope"}) == {}


def test_a_rule_routes_and_replaces_the_fallbacks() -> None:
    chosen = rule(
        {},
        actions={
            "route_to": "claude-haiku-4-5",
            "fallbacks": ["gemini-2.5-flash", "claude-haiku-4-5", "gpt-4o-mini"],
        },
    )
    resolution = routed_resolution(CATALOG, ALL_PROVIDERS, chosen, model="gpt-4o", mode="balanced")
    assert resolution.target.model_id == "claude-haiku-4-5"
    assert [t.model_id for t in resolution.alternatives] == ["gemini-2.5-flash", "gpt-4o-mini"]
    assert "rule_x" in resolution.reasoning
    # Fallbacks of providers not active in the workspace are left out.
    partial = routed_resolution(
        CATALOG, frozenset({"anthropic", "openai"}), chosen, model="gpt-4o", mode="balanced"
    )
    assert [t.model_id for t in partial.alternatives] == ["gpt-4o-mini"]


def test_a_rule_without_route_to_keeps_the_model_and_without_fallbacks_the_catalog_chain() -> None:
    keep = rule({}, actions={"cache": {"enabled": True}})
    resolution = routed_resolution(CATALOG, ALL_PROVIDERS, keep, model="gpt-4o", mode="balanced")
    assert resolution.target.model_id == "gpt-4o"
    assert [t.model_id for t in resolution.alternatives] == [
        "claude-sonnet-5-5",
        "gemini-2.5-flash",
    ]


def chat_request(max_tokens: int | None = None) -> ChatRequest:
    return ChatRequest("gpt-4o", [{"role": "user", "content": "Hi"}], max_tokens=max_tokens)


def test_dry_run_prices_the_resolved_model() -> None:
    cheap = rule({"token_estimate": {"min": 1000}}, actions={"route_to": "gpt-4o-mini"})
    run = dry_run(
        CATALOG,
        ALL_PROVIDERS,
        [cheap],
        ctx(prompt_tokens=2000),
        model="gpt-4o",
        mode="balanced",
        request=chat_request(),
    )
    assert run.matched is cheap
    assert run.resolution.target.model_id == "gpt-4o-mini"
    assert run.cost is not None
    assert run.cost.total == pytest.approx((2000 * 0.15 + 256 * 0.6) / 1_000_000)
    unmatched = dry_run(
        CATALOG,
        ALL_PROVIDERS,
        [cheap],
        ctx(),
        model="gpt-4o",
        mode="balanced",
        request=chat_request(max_tokens=100),
    )
    assert unmatched.matched is None
    assert unmatched.resolution.target.model_id == "gpt-4o"
    assert unmatched.completion_tokens == 100
    forced = dry_run(
        CATALOG,
        ALL_PROVIDERS,
        [rule({})],
        ctx(),
        model="gpt-4o",
        mode="balanced",
        request=chat_request(),
        provider="openai",
    )
    assert forced.matched is None and forced.evaluations == ()
