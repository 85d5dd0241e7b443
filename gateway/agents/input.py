"""The agent endpoints' bodies, declared: one attrs class per body, from which both the
OpenAPI document's schema and the server's checks come (`gateway.platform.shapes`).

Bodies are closed: an unknown field is refused rather than ignored, since a misspelt
limit silently ignored is a budget that does not hold. What a declaration cannot say (a
`limits` naming a template other than `template`'s; a limit absent from a change, which
keeps its override, against a null one, which removes it) is read here after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs

from gateway.agents.limits import (
    LIMIT_NAMES,
    AgentLimitsBody,
    given_limits,
    overridden,
    template_limits,
)
from gateway.platform.auth import MAX_SESSION_CHARS
from gateway.platform.errors import ApiError
from gateway.platform.shapes import (
    NON_BLANK,
    NOT_NULL,
    Choices,
    Count,
    Doc,
    Length,
    Range,
    accepts_more,
    parse,
)
from store.agents import AutoSuspend

DEFAULT_TOOLS = ("self_inspect/*",)
MAX_TOOLS = 100
MAX_NAME = 200
MAX_FRACTIONS = 10
MAX_URL = 2048
MAX_REASON = 500

Template = Literal["Free", "Standard", "Enterprise"]
AgentName = Annotated[str, NON_BLANK, Length(most=MAX_NAME)]
ToolName = Annotated[str, Length(least=1, most=MAX_NAME)]
Tools = Annotated[
    tuple[ToolName, ...],
    Count(most=MAX_TOOLS),
    Doc("The MCP tools the agent may call (`self_inspect/*` when left out or null)"),
]
AbuseThreshold = Annotated[int, Range(least=1, most=100_000)]
LimitsOrTemplate = Annotated[
    AgentLimitsBody | Template | None,
    Doc("Limits that may only lower the organisation's (null: inherit), or a template's name"),
]


@attrs.frozen
class AgentPermissionsBody:
    tools: Tools | None = None


@attrs.frozen
class AgentAutoSuspendBody:
    """Fields left out keep their value (the defaults at creation)."""

    on_cost_limit: Annotated[bool | None, NOT_NULL] = None
    on_rpm_abuse: Annotated[bool | None, NOT_NULL] = None
    abuse_threshold: Annotated[AbuseThreshold | None, NOT_NULL] = None


@attrs.frozen
class AgentBody:
    """A new agent; `limits` may name a template, which must then be `template`'s."""

    name: AgentName
    permissions: AgentPermissionsBody | None = None
    limits: LimitsOrTemplate = None
    template: Template | None = None
    auto_suspend: AgentAutoSuspendBody | None = None


@attrs.frozen
class AgentChange:
    """A change of an agent: `limits` merged (a null removes an override), `auto_suspend`
    merged, `permissions.tools` replaced; a template replaces the overrides, and a
    `limits` object given with it is merged over its figures."""

    name: Annotated[AgentName | None, NOT_NULL] = None
    permissions: AgentPermissionsBody | None = None
    limits: LimitsOrTemplate = None
    template: Template | None = None
    auto_suspend: AgentAutoSuspendBody | None = None


@accepts_more
@attrs.frozen
class AgentSuspension:
    reason: Annotated[str, Length(most=MAX_REASON)] | None = None


LimitName = Annotated[str, Choices(LIMIT_NAMES)]
Fraction = Annotated[float, Range(above=0, most=1)]
Fractions = Annotated[tuple[Fraction, ...], Count(least=1, most=MAX_FRACTIONS)]


@attrs.frozen
class AgentAlertBody:
    """A limit-warning alert: for each limit named, the fractions of it that fire."""

    type: Literal["limit_warning"]
    thresholds: Annotated[dict[LimitName, Fractions], Count(least=1)]
    webhook_url: Annotated[str, Length(least=1, most=MAX_URL)]


Session = Annotated[
    str,
    Length(most=MAX_SESSION_CHARS),
    Doc("The session to detail (default: the agent key's own, `default` for a manager)"),
]


@attrs.frozen
class AgentUsageQuery:
    session: Session | None = None


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
    auto_suspend: AgentAutoSuspendBody | None
    tools: tuple[str, ...] | None = None
    template: str | None = None


@attrs.frozen
class AlertSpec:
    thresholds: dict[str, tuple[float, ...]]
    webhook_url: str


def _template_and_limits(
    template: str | None, limits: AgentLimitsBody | str | None, raw: object
) -> tuple[str | None, dict[str, float | None] | None]:
    """The template a body names and the limits it gives (only those present)."""
    if isinstance(limits, str):
        if template is not None and template != limits:
            raise _template_conflict()
        return limits, None
    if limits is None:
        return template, None
    assert isinstance(raw, Mapping)
    return template, given_limits(limits, raw)


def parse_create(body: Mapping[str, Any]) -> AgentSpec:
    spec = parse(AgentBody, body)
    template, given = _template_and_limits(spec.template, spec.limits, body.get("limits"))
    base: dict[str, float] = {} if template is None else template_limits(template)
    return AgentSpec(
        name=spec.name.strip(),
        tools=_tools(spec.permissions),
        limits=overridden(base, given or {}),
        template=template,
        auto_suspend=merged_auto_suspend(AutoSuspend(), spec.auto_suspend),
    )


def _tools(permissions: AgentPermissionsBody | None) -> tuple[str, ...]:
    if permissions is None or permissions.tools is None:
        return DEFAULT_TOOLS
    return tuple(dict.fromkeys(permissions.tools))


def parse_patch(body: Mapping[str, Any]) -> AgentPatch:
    change = parse(AgentChange, body)
    template, given = _template_and_limits(change.template, change.limits, body.get("limits"))
    name = None if change.name is None else change.name.strip()
    tools = None if change.permissions is None else _tools(change.permissions)
    return AgentPatch(name, given, change.auto_suspend, tools, template)


def merged_auto_suspend(current: AutoSuspend, given: AgentAutoSuspendBody | None) -> AutoSuspend:
    """`current` with the fields `given` names (a left-out field is None)."""
    if given is None:
        return current
    named = {k: v for k, v in attrs.asdict(given).items() if v is not None}
    return attrs.evolve(current, **named)


def parse_alert(body: Mapping[str, Any]) -> AlertSpec:
    spec = parse(AgentAlertBody, body)
    thresholds = {
        name: tuple(sorted(set(fractions))) for name, fractions in spec.thresholds.items()
    }
    return AlertSpec(thresholds, spec.webhook_url)


def _template_conflict() -> ApiError:
    """`limits` names a template and `template` another: a refusal of what the two mean
    together, which the document cannot state (`template_conflict`)."""
    return ApiError(
        400,
        "template_conflict",
        "'limits' and 'template' name different templates.",
        param="limits",
    )
