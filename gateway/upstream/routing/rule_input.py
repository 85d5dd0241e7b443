"""Validating routing-rule bodies (pure), and the rule state table.

A body problem is a 400 `invalid_rule` naming the parameter (`conditions.time_range.start`)
and the bad value; a model the catalog does not know as a chat model, in `route_to` or
`fallbacks`, is a 422 `invalid_model` naming it. What passes is normalised to the JSON
form that is stored and shown back (defaults of `retry` and `cache` filled in), which
`gateway.upstream.routing.rules.compile_conditions` / `compile_actions` read without checking again.
The fields of `actions.transform` are checked by `gateway.upstream.routing.transform`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from gateway.platform.errors import ApiError
from gateway.upstream.routing.rules import parse_hhmm
from gateway.upstream.routing.transform import TransformError, parse_transform
from providers.catalog import Catalog

MAX_PRIORITY = 1_000_000
MAX_PATTERNS = 100
MAX_FALLBACKS = 10
MAX_NAME = 200
RETRY_DEFAULTS = {"max_attempts": 3, "initial_delay_ms": 250}
RETRY_BOUNDS = {"max_attempts": (1, 10), "initial_delay_ms": (0, 60_000)}
CACHE_TTL_DEFAULT = 3600
CACHE_TTL_BOUNDS = (1, 86_400)
CONDITION_KEYS = ("models", "api_keys", "headers", "metadata", "time_range", "token_estimate")
ACTION_KEYS = ("route_to", "fallbacks", "retry", "cache", "transform")
RULE_FIELDS = ("name", "priority", "enabled", "conditions", "actions")
READ_ONLY_FIELDS = ("id", "object", "created_at", "updated_at")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")

# (enabled now, trigger) -> enabled after; both triggers are idempotent.
TRANSITIONS: Mapping[tuple[bool, str], bool] = {
    (True, "disable"): False,
    (False, "enable"): True,
    (True, "enable"): True,
    (False, "disable"): False,
}


def next_enabled(current: bool, trigger: str) -> bool:
    return TRANSITIONS[(current, trigger)]


def invalid_rule(message: str, *, param: str | None, value: Any = None) -> ApiError:
    return ApiError(400, "invalid_rule", message, param=param, value=value)


def invalid_model(model: Any, param: str, reason: str) -> ApiError:
    return ApiError(422, "invalid_model", reason, param=param, model=model)


@attrs.frozen
class RuleSpec:
    name: str
    priority: int | None  # None: the store picks the next free one
    enabled: bool
    conditions: dict[str, Any]
    actions: dict[str, Any]


def parse_create(body: Mapping[str, Any], catalog: Catalog) -> RuleSpec:
    _check_fields(body)
    for required in ("name", "conditions", "actions"):
        if body.get(required) is None:
            raise invalid_rule(f"'{required}' is required.", param=required)
    priority = body.get("priority")
    return RuleSpec(
        name=parse_name(body["name"]),
        priority=None if priority is None else parse_priority(priority),
        enabled=parse_enabled(body.get("enabled", True)),
        conditions=parse_conditions(body["conditions"]),
        actions=parse_actions(body["actions"], catalog),
    )


def parse_patch(body: Mapping[str, Any], catalog: Catalog) -> dict[str, Any]:
    """The fields to change; `conditions` and `actions` replace the stored objects whole."""
    _check_fields(body)
    parsers: dict[str, Callable[[Any], Any]] = {
        "name": parse_name,
        "priority": parse_priority,
        "enabled": parse_enabled,
        "conditions": parse_conditions,
        "actions": lambda value: parse_actions(value, catalog),
    }
    changes = {name: parse(body[name]) for name, parse in parsers.items() if name in body}
    if not changes:
        raise invalid_rule(f"Nothing to change: send any of {', '.join(RULE_FIELDS)}.", param=None)
    return changes


def _check_fields(body: Mapping[str, Any]) -> None:
    unknown = sorted(set(body) - set(RULE_FIELDS) - set(READ_ONLY_FIELDS))
    if unknown:
        raise invalid_rule(
            f"Unknown rule fields: {', '.join(unknown)}.", param=unknown[0], value=body[unknown[0]]
        )


def parse_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise invalid_rule(
            f"'name' must be a non-empty string of at most {MAX_NAME} characters.",
            param="name",
            value=value,
        )
    return value.strip()


def parse_priority(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PRIORITY:
        raise invalid_rule(
            f"'priority' must be an integer from 0 to {MAX_PRIORITY}.",
            param="priority",
            value=value,
        )
    return value


def parse_enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise invalid_rule("'enabled' must be a boolean.", param="enabled", value=value)
    return value


# -- conditions ------------------------------------------------------------------------------


def parse_conditions(value: Any) -> dict[str, Any]:
    """An object of known conditions; `{}` is allowed and matches every request."""
    obj = _object(value, "conditions", CONDITION_KEYS)
    parsers: dict[str, Callable[[Any, str], Any]] = {
        "models": _patterns,
        "api_keys": _patterns,
        "headers": _headers,
        "metadata": _metadata,
        "time_range": _time_range,
        "token_estimate": _token_estimate,
    }
    return {name: parsers[name](item, f"conditions.{name}") for name, item in obj.items()}


def _object(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_rule(f"'{where}' must be an object.", param=where, value=value)
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise invalid_rule(
            f"Unknown key '{unknown[0]}' in '{where}'; known: {', '.join(known)}.",
            param=f"{where}.{unknown[0]}",
            value=value[unknown[0]],
        )
    return value


def _pattern(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or "*" in value[:-1] or len(value) > 256:
        raise invalid_rule(
            f"'{where}' must be a non-empty string; '*' may only end it.", param=where, value=value
        )
    return value


def _patterns(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_PATTERNS:
        raise invalid_rule(
            f"'{where}' must be an array of 1 to {MAX_PATTERNS} patterns "
            "(omit the condition to match any).",
            param=where,
            value=value,
        )
    return [_pattern(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _headers(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise invalid_rule(f"'{where}' must be a non-empty object.", param=where, value=value)
    result: dict[str, Any] = {}
    for name, accepted in value.items():
        if not HEADER_NAME.match(name):
            raise invalid_rule(f"'{name}' is not a header name.", param=where, value=name)
        if name.lower() in (n.lower() for n in result):
            raise invalid_rule(f"Header '{name}' is listed twice.", param=where, value=name)
        place = f"{where}.{name}"
        result[name] = (
            [_pattern(v, f"{place}[{i}]") for i, v in enumerate(_non_empty_list(accepted, place))]
            if isinstance(accepted, list)
            else _pattern(accepted, place)
        )
    return result


def _non_empty_list(value: list[Any], where: str) -> list[Any]:
    if not 1 <= len(value) <= MAX_PATTERNS:
        raise invalid_rule(
            f"'{where}' must hold 1 to {MAX_PATTERNS} values.", param=where, value=value
        )
    return value


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return _pattern(value, where) if value else value
    if isinstance(value, bool | int | float):
        return value
    raise invalid_rule(
        f"'{where}' must be a string, number or boolean (or an array of them).",
        param=where,
        value=value,
    )


def _metadata(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise invalid_rule(f"'{where}' must be a non-empty object.", param=where, value=value)
    result: dict[str, Any] = {}
    for name, expected in value.items():
        place = f"{where}.{name}"
        result[name] = (
            [_scalar(v, f"{place}[{i}]") for i, v in enumerate(_non_empty_list(expected, place))]
            if isinstance(expected, list)
            else _scalar(expected, place)
        )
    return result


def _time_range(value: Any, where: str) -> dict[str, Any]:
    obj = _object(value, where, ("start", "end", "timezone"))
    result: dict[str, Any] = {}
    for end in ("start", "end"):
        text = obj.get(end)
        try:
            parse_hhmm(text if isinstance(text, str) else "")
        except ValueError:
            raise invalid_rule(
                f"'{where}.{end}' must be a time as HH:MM (00:00 to 23:59).",
                param=f"{where}.{end}",
                value=text,
            ) from None
        result[end] = text
    if result["start"] == result["end"]:
        raise invalid_rule(
            f"'{where}' is empty: start and end are equal (omit it to match all day).",
            param=where,
            value=value,
        )
    result["timezone"] = _zone(obj.get("timezone", "UTC"), f"{where}.timezone")
    return result


def _zone(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise invalid_rule(f"'{where}' must be an IANA time zone name.", param=where, value=name)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise invalid_rule(
            f"'{name}' is not a known time zone (e.g. Europe/Paris, UTC).",
            param=where,
            value=name,
        ) from None
    return name


def _token_estimate(value: Any, where: str) -> dict[str, int]:
    obj = _object(value, where, ("min", "max"))
    if not obj:
        raise invalid_rule(f"'{where}' needs 'min' or 'max'.", param=where, value=value)
    for name, bound in obj.items():
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
            raise invalid_rule(
                f"'{where}.{name}' must be a non-negative integer.",
                param=f"{where}.{name}",
                value=bound,
            )
    if "min" in obj and "max" in obj and obj["min"] > obj["max"]:
        raise invalid_rule(f"'{where}.min' exceeds its 'max'.", param=where, value=value)
    return dict(obj)


# -- actions ---------------------------------------------------------------------------------


def parse_actions(value: Any, catalog: Catalog) -> dict[str, Any]:
    obj = _object(value, "actions", ACTION_KEYS)
    if not obj:
        raise invalid_rule(
            f"'actions' needs at least one of {', '.join(ACTION_KEYS)}.",
            param="actions",
            value=value,
        )
    result: dict[str, Any] = {}
    if "route_to" in obj:
        result["route_to"] = _model(obj["route_to"], "actions.route_to", catalog)
    if "fallbacks" in obj:
        result["fallbacks"] = _fallbacks(obj["fallbacks"], catalog)
    if "retry" in obj:
        result["retry"] = _retry(obj["retry"])
    if "cache" in obj:
        result["cache"] = _cache(obj["cache"])
    if "transform" in obj:
        result["transform"] = _transform(obj["transform"])
    return result


def _transform(value: Any) -> dict[str, Any]:
    try:
        return parse_transform(value)
    except TransformError as exc:
        raise invalid_rule(exc.message, param=exc.param, value=exc.value) from None


def _model(value: Any, where: str, catalog: Catalog) -> str:
    if not isinstance(value, str) or not value:
        raise invalid_rule(f"'{where}' must be a model id.", param=where, value=value)
    info = catalog.model(value) or catalog.passthrough(value, "chat")
    if info is None:
        raise invalid_model(value, where, f"Unknown model '{value}' in '{where}'.")
    if not info.has("chat"):
        raise invalid_model(value, where, f"The model '{value}' in '{where}' is not a chat model.")
    return value


def _fallbacks(value: Any, catalog: Catalog) -> list[str]:
    where = "actions.fallbacks"
    if not isinstance(value, list) or len(value) > MAX_FALLBACKS:
        raise invalid_rule(
            f"'{where}' must be an array of at most {MAX_FALLBACKS} model ids.",
            param=where,
            value=value,
        )
    models = [_model(item, f"{where}[{i}]", catalog) for i, item in enumerate(value)]
    return list(dict.fromkeys(models))


def _bounded_int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid_rule(
            f"'{where}' must be an integer from {low} to {high}.", param=where, value=value
        )
    return value


def _retry(value: Any) -> dict[str, int]:
    obj = _object(value, "actions.retry", tuple(RETRY_DEFAULTS))
    merged = RETRY_DEFAULTS | obj
    return {
        name: _bounded_int(merged[name], f"actions.retry.{name}", *RETRY_BOUNDS[name])
        for name in RETRY_DEFAULTS
    }


def _cache(value: Any) -> dict[str, Any]:
    obj = _object(value, "actions.cache", ("enabled", "ttl_seconds"))
    enabled = obj.get("enabled", True)
    if not isinstance(enabled, bool):
        raise invalid_rule(
            "'actions.cache.enabled' must be a boolean.",
            param="actions.cache.enabled",
            value=enabled,
        )
    ttl = _bounded_int(
        obj.get("ttl_seconds", CACHE_TTL_DEFAULT), "actions.cache.ttl_seconds", *CACHE_TTL_BOUNDS
    )
    return {"enabled": enabled, "ttl_seconds": ttl}
