"""Validating the agent endpoints' bodies into attrs types (pure; 400s name the field).

Bodies are closed: an unknown field is refused rather than ignored, since a misspelt
limit silently ignored is a budget that does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.agents.limits import LIMIT_NAMES, parse_limits, template_limits
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.params import whole_number
from store.agents import AutoSuspend

DEFAULT_TOOLS = ("self_inspect/*",)
MAX_TOOLS = 100
MAX_NAME = 200
MAX_FRACTIONS = 10
MAX_URL = 2048


@attrs.frozen
class AgentSpec:
    name: str
    tools: tuple[str, ...]
    limits: dict[str, float]
    template: str | None
    auto_suspend: AutoSuspend


@attrs.frozen
class AgentPatch:
    name: str | None
    limits: dict[str, float | None] | None
    auto_suspend: dict[str, Any] | None
    tools: tuple[str, ...] | None = None
    template: str | None = None


@attrs.frozen
class AlertSpec:
    thresholds: dict[str, tuple[float, ...]]
    webhook_url: str


def _closed(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise invalid_request(
            f"Unknown field '{unknown[0]}'; allowed: {', '.join(allowed)}.", param=unknown[0]
        )


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME:
        raise invalid_request(
            f"'name' must be a non-empty string of at most {MAX_NAME} characters.", param="name"
        )
    return value.strip()


def parse_create(body: Mapping[str, Any]) -> AgentSpec:
    """`name`, `permissions.tools`, `limits` (an object, or a template's name) or
    `template`, `auto_suspend`."""
    _closed(body, ("name", "permissions", "limits", "template", "auto_suspend"))
    template = body.get("template")
    raw_limits = body.get("limits")
    if isinstance(raw_limits, str):
        if template is not None and template != raw_limits:
            raise _template_conflict()
        template, raw_limits = raw_limits, None
    own: dict[str, float] = {} if template is None else template_limits(template)
    if raw_limits is not None:
        for name, value in parse_limits(raw_limits).items():
            if value is None:
                own.pop(name, None)
            else:
                own[name] = value
    return AgentSpec(
        name=_name(body.get("name")),
        tools=_tools(body.get("permissions")),
        limits=own,
        template=template if isinstance(template, str) else None,
        auto_suspend=AutoSuspend(**_auto_suspend(body.get("auto_suspend"), AutoSuspend())),
    )


def _tools(permissions: object) -> tuple[str, ...]:
    if permissions is None:
        return DEFAULT_TOOLS
    if not isinstance(permissions, dict):
        raise invalid_request("'permissions' must be an object.", param="permissions")
    _closed(permissions, ("tools",))
    tools = permissions.get("tools")
    if tools is None:
        return DEFAULT_TOOLS
    if (
        not isinstance(tools, list)
        or len(tools) > MAX_TOOLS
        or not all(isinstance(t, str) and 0 < len(t) <= MAX_NAME for t in tools)
    ):
        raise invalid_request(
            f"'permissions.tools' must be an array of at most {MAX_TOOLS} tool names.",
            param="permissions.tools",
            value=tools,
        )
    return tuple(dict.fromkeys(tools))


def _auto_suspend(raw: object, current: AutoSuspend) -> dict[str, Any]:
    """The fields of `auto_suspend` after applying `raw` over `current`."""
    merged = attrs.asdict(current)
    if raw is None:
        return merged
    if not isinstance(raw, dict):
        raise invalid_request("'auto_suspend' must be an object.", param="auto_suspend")
    _closed(raw, ("on_cost_limit", "on_rpm_abuse", "abuse_threshold"))
    for flag in ("on_cost_limit", "on_rpm_abuse"):
        if flag in raw:
            if not isinstance(raw[flag], bool):
                raise invalid_request(
                    f"'{flag}' must be a boolean.", param=f"auto_suspend.{flag}", value=raw[flag]
                )
            merged[flag] = raw[flag]
    if "abuse_threshold" in raw:
        value = raw["abuse_threshold"]
        whole = whole_number(value)
        if whole is None or not 1 <= whole <= 100_000:
            raise invalid_request(
                "'abuse_threshold' must be an integer from 1 to 100000.",
                param="auto_suspend.abuse_threshold",
                value=value,
            )
        merged["abuse_threshold"] = whole
    return merged


def parse_patch(body: Mapping[str, Any]) -> AgentPatch:
    """`limits` (merged: a null removes an override), `auto_suspend` (merged), `name`,
    `permissions.tools` (replaced: an agent's tools change without a new key), and, as at
    creation, `template` or `limits` naming one (its figures replace the overrides, the
    `limits` object given with it is merged over them)."""
    _closed(body, ("name", "permissions", "limits", "template", "auto_suspend"))
    name = _name(body["name"]) if "name" in body else None
    template, raw_limits = body.get("template"), body.get("limits")
    if isinstance(raw_limits, str):
        if template is not None and template != raw_limits:
            raise _template_conflict()
        template, raw_limits = raw_limits, None
    if template is not None:
        template_limits(template)  # a 400 naming it now, before anything is read
    limits = parse_limits(raw_limits) if raw_limits is not None else None
    raw = body.get("auto_suspend")
    if raw is not None and not isinstance(raw, dict):
        raise invalid_request("'auto_suspend' must be an object.", param="auto_suspend")
    if raw is not None:
        _auto_suspend(raw, AutoSuspend())  # validated now, merged over the stored one later
    tools = _tools(body["permissions"]) if body.get("permissions") is not None else None
    return AgentPatch(name, limits, raw, tools, template)


def merged_auto_suspend(current: AutoSuspend, raw: dict[str, Any] | None) -> AutoSuspend:
    return AutoSuspend(**_auto_suspend(raw, current))


def parse_alert(body: Mapping[str, Any]) -> AlertSpec:
    """`type` (`limit_warning`), `thresholds` (limit name -> fractions in (0, 1]),
    `webhook_url`."""
    _closed(body, ("type", "thresholds", "webhook_url"))
    if body.get("type") != "limit_warning":
        raise invalid_request(
            "'type' must be 'limit_warning'.", param="type", value=body.get("type")
        )
    url = body.get("webhook_url")
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise invalid_request("'webhook_url' must be a URL.", param="webhook_url")
    raw = body.get("thresholds")
    if not isinstance(raw, dict) or not raw:
        raise invalid_request(
            "'thresholds' must map limit names to arrays of fractions.", param="thresholds"
        )
    thresholds: dict[str, tuple[float, ...]] = {}
    for name, fractions in raw.items():
        where = f"thresholds.{name}"
        if name not in LIMIT_NAMES:
            raise invalid_request(f"Unknown limit '{name}'.", param=where)
        if (
            not isinstance(fractions, list)
            or not 0 < len(fractions) <= MAX_FRACTIONS
            or not all(_fraction(f) for f in fractions)
        ):
            raise invalid_request(
                f"'{name}' needs 1 to {MAX_FRACTIONS} fractions above 0 and at most 1.",
                param=where,
                value=fractions,
            )
        thresholds[name] = tuple(sorted({float(f) for f in fractions}))
    return AlertSpec(thresholds, url)


def _fraction(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 < value <= 1


def _template_conflict() -> ApiError:
    """`limits` names a template and `template` another: a refusal of what the two mean
    together, which the document cannot state (`template_conflict`)."""
    return ApiError(
        400,
        "template_conflict",
        "'limits' and 'template' name different templates.",
        param="limits",
    )
