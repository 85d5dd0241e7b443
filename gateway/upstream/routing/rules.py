"""Routing rules as the matcher sees them, and the matcher itself (pure, I/O-free).

A stored rule (`store.rules.RoutingRuleRecord`) holds its conditions and actions as
validated JSON objects; `compile_rule` turns them into typed, ready-to-test values once
(time zones looked up, header names lower-cased), so that matching a request costs a few
comparisons and no parsing.

Semantics, for every condition present in a rule (an absent condition always holds; a
rule with no condition at all matches every request):

- `models`: the requested model, under any of its names (as sent, catalog id, aliases),
  equals one of the patterns; a trailing `*` matches a prefix (`gpt-4o*`).
- `api_keys`: one pattern matches the caller's key id (`key_...`), key prefix
  (`gw_prod_`) or key name. A trailing `*` matches a prefix, so `gw_prod_*` means "every
  production key" and `ci-*` every key named `ci-...`. The secret itself is never seen.
- `headers`: every listed header is present with an accepted value. Names are
  case-insensitive; a value is a string or an array of strings (any of them); values are
  compared exactly, a trailing `*` matches a prefix and `*` alone any value.
- `metadata`: every listed key of the request's metadata (body `metadata` over
  `service.tags`) holds the value: a scalar, or an array of scalars (any of them);
  strings may end with `*` (prefix). `true` never equals `1`.
- `time_range`: the request's instant, read in `timezone` (IANA, default UTC), falls in
  [start, end). When start > end the range crosses midnight (22:00-06:00).
- `token_estimate`: the prompt estimate is at least `min` and at most `max` (both
  inclusive, either optional; `max` is our extension).

All the conditions of a rule must hold. Rules are tried by ascending priority, disabled
rules are skipped, and the first match wins. Conditions look at the request as the client
sent it; a matched rule's `transform` (see `gateway.upstream.routing.transform`) changes only what
the upstream receives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

import attrs

from gateway.upstream.routing.transform import Transform, compile_transform
from store.rules import RoutingRuleRecord

logger = logging.getLogger(__name__)

Scalar = str | int | float | bool


def pattern_matches(pattern: str, value: str) -> bool:
    """`*` at the end of a pattern matches any suffix; otherwise the value must be equal."""
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return value == pattern


def parse_hhmm(text: str) -> time:
    """`HH:MM` (24-hour) as a time; ValueError otherwise."""
    hours, sep, minutes = text.partition(":")
    if not sep or len(hours) != 2 or len(minutes) != 2:
        raise ValueError(f"not HH:MM: {text!r}")
    if not (hours.isdigit() and minutes.isdigit()):
        raise ValueError(f"not HH:MM: {text!r}")
    return time(int(hours), int(minutes))


def _lower_keys(value: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): item for name, item in value.items()}


@attrs.frozen
class RequestContext:
    """What the matcher may look at in one request."""

    model_names: frozenset[str]
    key_id: str
    key_prefix: str
    key_name: str
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_lower_keys)
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    now: datetime = attrs.field(factory=lambda: datetime.now(UTC))
    prompt_tokens: int = 0

    @now.validator
    def _aware(self, _: attrs.Attribute[datetime], value: datetime) -> None:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("RequestContext.now must be timezone-aware")


@attrs.frozen
class TimeRange:
    start: time
    end: time
    zone: ZoneInfo

    def contains(self, moment: datetime) -> bool:
        local = moment.astimezone(self.zone).time().replace(second=0, microsecond=0)
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end  # crosses midnight


def _scalar_matches(expected: Scalar, actual: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(actual, str) and pattern_matches(expected, actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return isinstance(actual, int | float) and expected == actual


Check = Callable[[RequestContext], bool]


@attrs.frozen
class Conditions:
    models: tuple[str, ...] | None = None
    api_keys: tuple[str, ...] | None = None
    headers: Mapping[str, tuple[str, ...]] | None = None  # lower-case names
    metadata: Mapping[str, tuple[Scalar, ...]] | None = None
    time_range: TimeRange | None = None
    token_min: int | None = None
    token_max: int | None = None

    def checks(self) -> list[tuple[str, Check]]:
        """(condition name, test) for each condition present, in a cheap-first order."""
        found: list[tuple[str, Check]] = []
        if self.models is not None:
            found.append(("models", self._models))
        if self.api_keys is not None:
            found.append(("api_keys", self._api_keys))
        if self.token_min is not None or self.token_max is not None:
            found.append(("token_estimate", self._tokens))
        if self.headers is not None:
            found.append(("headers", self._headers))
        if self.metadata is not None:
            found.append(("metadata", self._metadata))
        if self.time_range is not None:
            found.append(("time_range", self._time))
        return found

    def _models(self, ctx: RequestContext) -> bool:
        patterns = self.models or ()
        return any(pattern_matches(p, name) for p in patterns for name in ctx.model_names)

    def _api_keys(self, ctx: RequestContext) -> bool:
        names = (ctx.key_id, ctx.key_prefix, ctx.key_name)
        return any(pattern_matches(p, name) for p in self.api_keys or () for name in names)

    def _tokens(self, ctx: RequestContext) -> bool:
        low_ok = self.token_min is None or ctx.prompt_tokens >= self.token_min
        return low_ok and (self.token_max is None or ctx.prompt_tokens <= self.token_max)

    def _headers(self, ctx: RequestContext) -> bool:
        for name, accepted in (self.headers or {}).items():
            actual = ctx.headers.get(name)
            if actual is None or not any(pattern_matches(v, actual) for v in accepted):
                return False
        return True

    def _metadata(self, ctx: RequestContext) -> bool:
        for name, accepted in (self.metadata or {}).items():
            if name not in ctx.metadata:
                return False
            if not any(_scalar_matches(v, ctx.metadata[name]) for v in accepted):
                return False
        return True

    def _time(self, ctx: RequestContext) -> bool:
        return self.time_range is not None and self.time_range.contains(ctx.now)


@attrs.frozen
class RetryPolicy:
    max_attempts: int
    initial_delay_ms: int


@attrs.frozen
class CachePolicy:
    enabled: bool
    ttl_seconds: int


@attrs.frozen
class Actions:
    route_to: str | None = None
    fallbacks: tuple[str, ...] = ()
    retry: RetryPolicy | None = None
    cache: CachePolicy | None = None
    transform: Transform | None = None


@attrs.frozen
class Rule:
    """A compiled rule: what `match_rule` tests and what the chat path applies."""

    id: str
    name: str
    priority: int
    enabled: bool
    conditions: Conditions
    actions: Actions
    _checks: tuple[tuple[str, Check], ...] = attrs.field(eq=False, repr=False)

    def matches(self, ctx: RequestContext) -> bool:
        return all(check(ctx) for _, check in self._checks)

    def evaluate(self, ctx: RequestContext) -> dict[str, bool]:
        """Every condition's outcome (no short cut), for explanations."""
        return {name: check(ctx) for name, check in self._checks}


def make_rule(
    *, id: str, name: str, priority: int, enabled: bool, conditions: Conditions, actions: Actions
) -> Rule:
    return Rule(id, name, priority, enabled, conditions, actions, tuple(conditions.checks()))


def match_rule(rules: Iterable[Rule], ctx: RequestContext) -> Rule | None:
    """The enabled rule of lowest priority whose conditions all hold, or None."""
    for rule in sorted(rules, key=lambda r: r.priority):
        if rule.enabled and rule.matches(ctx):
            return rule
    return None


@attrs.frozen
class Evaluation:
    rule: Rule
    matched: bool
    conditions: Mapping[str, bool]


def explain(rules: Iterable[Rule], ctx: RequestContext) -> list[Evaluation]:
    """The evaluations `match_rule` performs, in order, up to and including the match."""
    trail: list[Evaluation] = []
    for rule in sorted(rules, key=lambda r: r.priority):
        if not rule.enabled:
            continue
        outcome = rule.evaluate(ctx)
        trail.append(Evaluation(rule, all(outcome.values()), outcome))
        if all(outcome.values()):
            break
    return trail


# -- compiling the stored JSON --------------------------------------------------------------


def _strings(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _scalars(value: Any) -> tuple[Scalar, ...]:
    return tuple(value) if isinstance(value, list) else (value,)


def compile_conditions(data: Mapping[str, Any]) -> Conditions:
    """Typed conditions from their validated JSON form (see `rule_input`)."""
    window = data.get("time_range")
    tokens = data.get("token_estimate") or {}
    headers = data.get("headers")
    metadata = data.get("metadata")
    return Conditions(
        models=tuple(data["models"]) if "models" in data else None,
        api_keys=tuple(data["api_keys"]) if "api_keys" in data else None,
        headers=(None if headers is None else {k.lower(): _strings(v) for k, v in headers.items()}),
        metadata=None if metadata is None else {k: _scalars(v) for k, v in metadata.items()},
        time_range=(
            None
            if window is None
            else TimeRange(
                parse_hhmm(window["start"]),
                parse_hhmm(window["end"]),
                ZoneInfo(window.get("timezone", "UTC")),
            )
        ),
        token_min=tokens.get("min"),
        token_max=tokens.get("max"),
    )


def compile_actions(data: Mapping[str, Any], *, rule_id: str = "") -> Actions:
    retry = data.get("retry")
    cache = data.get("cache")
    return Actions(
        route_to=data.get("route_to"),
        fallbacks=tuple(data.get("fallbacks") or ()),
        retry=None
        if retry is None
        else RetryPolicy(retry["max_attempts"], retry["initial_delay_ms"]),
        cache=None if cache is None else CachePolicy(cache["enabled"], cache["ttl_seconds"]),
        transform=_transform(data.get("transform"), rule_id),
    )


def _transform(data: Any, rule_id: str) -> Transform | None:
    """The usable part of a stored transform. Rules stored before transforms were
    validated may hold keys the gateway does not know: those are ignored, and said so
    once, when the rule is compiled (at start or on change), not on every request."""
    if not isinstance(data, Mapping):
        return None
    transform, ignored = compile_transform(data)
    if ignored:
        logger.warning(
            "routing rule %s: ignoring unknown or invalid transform keys: %s",
            rule_id or "?",
            ", ".join(ignored),
        )
    return transform


def compile_rule(record: RoutingRuleRecord) -> Rule:
    """The matcher's form of a stored rule. Raises ValueError (or ZoneInfoNotFoundError,
    a KeyError) only for data that bypassed validation."""
    return make_rule(
        id=record.id,
        name=record.name,
        priority=record.priority,
        enabled=record.enabled,
        conditions=compile_conditions(record.conditions),
        actions=compile_actions(record.actions, rule_id=record.id),
    )
