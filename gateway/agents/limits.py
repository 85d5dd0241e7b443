"""What an agent may spend: the spec's limit names, its templates, and inheritance.

Pure. An agent's effective limit is its own override where it has one, else its
organisation's; an override may only lower the organisation's value (a raise is refused
naming the limit). An organisation that never set its agent limits has the defaults
below: the Enterprise template's figures for the five the templates name, and no limit
for the metered units (audio minutes, OCR pages, embedding tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import Range, parse

COST_LIMITS = ("cost_per_session", "cost_daily", "cost_monthly")
UNIT_LIMITS = (
    "audio_minutes_daily",
    "audio_minutes_monthly",
    "ocr_pages_daily",
    "ocr_pages_monthly",
    "embedding_tokens_daily",
)
COUNT_LIMITS = ("requests_per_minute", "concurrent_sessions")
LIMIT_NAMES: tuple[str, ...] = (
    "requests_per_minute",
    *COST_LIMITS,
    *UNIT_LIMITS,
    "concurrent_sessions",
)
MAX_LIMIT = 1e12
# Counted in whole units: a fraction is refused rather than rounded.
INTEGER_LIMITS = frozenset(
    {
        "requests_per_minute",
        "concurrent_sessions",
        "ocr_pages_daily",
        "ocr_pages_monthly",
        "embedding_tokens_daily",
    }
)

TEMPLATES: Mapping[str, Mapping[str, float]] = {
    "Free": {
        "requests_per_minute": 10,
        "cost_per_session": 0.50,
        "cost_daily": 5.00,
        "cost_monthly": 50.00,
        "concurrent_sessions": 1,
    },
    "Standard": {
        "requests_per_minute": 60,
        "cost_per_session": 5.00,
        "cost_daily": 100.00,
        "cost_monthly": 1000.00,
        "concurrent_sessions": 5,
    },
    "Enterprise": {
        "requests_per_minute": 300,
        "cost_per_session": 50.00,
        "cost_daily": 1000.00,
        "cost_monthly": 20000.00,
        "concurrent_sessions": 50,
    },
}
ORGANIZATION_DEFAULTS: Mapping[str, float] = TEMPLATES["Enterprise"]

Limits = dict[str, float | None]
"""Every limit name with its value; None: no limit."""


def organization_ceilings(stored: Mapping[str, float | None] | None) -> Limits:
    """The organisation's limits: what it stored (None: no limit), else the defaults."""
    source = ORGANIZATION_DEFAULTS if stored is None else stored
    return {name: _number(source.get(name)) for name in LIMIT_NAMES}


def effective(own: Mapping[str, float], ceilings: Limits) -> Limits:
    """The agent's limits: its override, else the organisation's (never above it)."""
    result: Limits = {}
    for name in LIMIT_NAMES:
        value, ceiling = own.get(name), ceilings[name]
        if value is None:
            result[name] = ceiling
        else:
            result[name] = value if ceiling is None else min(value, ceiling)
    return result


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


Cost = Annotated[float, Range(least=0, most=MAX_LIMIT)]
Whole = Annotated[int, Range(least=0, most=MAX_LIMIT)]


@attrs.frozen
class AgentLimitsBody:
    """Limits by name, each at most 1e12 (whole where counted); null: inherit the
    organisation's (an agent's) or no limit (the organisation's)."""

    requests_per_minute: Whole | None = None
    cost_per_session: Cost | None = None
    cost_daily: Cost | None = None
    cost_monthly: Cost | None = None
    audio_minutes_daily: Cost | None = None
    audio_minutes_monthly: Cost | None = None
    ocr_pages_daily: Whole | None = None
    ocr_pages_monthly: Whole | None = None
    embedding_tokens_daily: Whole | None = None
    concurrent_sessions: Whole | None = None


def given_limits(parsed: AgentLimitsBody, raw: Mapping[str, Any]) -> dict[str, float | None]:
    """The limits `raw` names (a null kept: it removes an override), from `parsed`."""
    found: dict[str, float | None] = {}
    for name in raw:
        value = getattr(parsed, name)
        found[name] = None if value is None else float(value)
    return found


def overridden(own: Mapping[str, float], given: Mapping[str, float | None]) -> dict[str, float]:
    """`own` overrides with `given` applied: a value sets one, a null removes it."""
    merged = dict(own)
    for name, value in given.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def parse_limits(raw: Mapping[str, Any]) -> dict[str, float | None]:
    """A body of limits: the 400 naming the offending limit, else the limits it names."""
    return given_limits(parse(AgentLimitsBody, raw), raw)


def template_limits(name: object) -> dict[str, float]:
    """A template's figures; 400 for an unknown template."""
    if not isinstance(name, str) or name not in TEMPLATES:
        raise invalid_request(
            f"Unknown template; use one of {', '.join(TEMPLATES)}.", param="template", value=name
        )
    return dict(TEMPLATES[name])


def check_lowered(own: Mapping[str, float], ceilings: Limits) -> None:
    """Refuse an override above the organisation's limit (400 naming the first one)."""
    for name in LIMIT_NAMES:
        value, ceiling = own.get(name), ceilings[name]
        if value is not None and ceiling is not None and value > ceiling:
            raise ApiError(
                400,
                "limit_above_organization",
                f"'{name}' may only lower the organisation's limit of {_show(ceiling)}; "
                f"{_show(value)} is higher.",
                param=f"limits.{name}",
                value=value,
                organization_limit=ceiling,
            )


def _show(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def shown(limits: Limits) -> dict[str, float | int | None]:
    """Limits for a JSON answer: whole numbers where the limit counts units."""
    return {
        name: (int(value) if value is not None and name in INTEGER_LIMITS else value)
        for name, value in limits.items()
    }
