"""Optimisation opportunities found in a workspace's actual usage. Pure and I/O-free.

Each finder looks at the period's served requests and re-prices the ones a change would
affect, with the same estimate that priced them (`gateway.sustainability.repricing`); the
saving is the carbon they emitted minus the carbon they would have emitted under the change.
A finder with nothing to save returns None, so no opportunity appears without usage behind
it. Savings are normalised to a 30-day month (`saving_g / 1000 * 30 / days` kg CO2e).

- `model_downgrade`: live chat requests whose model has a smaller sibling at the same provider
  within `DOWNGRADE_QUALITY_MARGIN` quality points (and above the routing quality floor);
- `green_routing`: live chat requests whose carbon would fall had `sustain_optimized` routing
  chosen the model (the lowest-carbon model of the workspace's active providers meeting the
  routing quality floor);
- `enable_caching`: repeated identical chat requests (same cache key) answered live: a cache
  would have answered the repeats without any model work;
- `token_optimization`: live chat answers longer than `LONG_OUTPUT_TOKENS`, capped by
  `max_tokens` at that length.

`batch_requests` and `time_shifting` are types of the API that these finders never produce:
under the published method a request's energy does not depend on how requests are grouped,
and grid intensities are annual averages, so neither change would move a figure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import attrs

from gateway.sustainability.answers import (
    DashboardItem,
    OpportunitiesReport,
    OpportunitiesSummary,
    Opportunity,
)
from gateway.sustainability.repricing import carbon_on, usage_of
from gateway.upstream.resolve import QUALITY_FLOOR, carbon_g
from providers.catalog import Catalog, ModelInfo
from providers.types import Usage
from store.sustainability import Group, LongOutputs, Repeats

DAYS_PER_MONTH = 30
DOWNGRADE_QUALITY_MARGIN = 15
LONG_OUTPUT_TOKENS = 1000
HIGH_ABOVE_KG, MEDIUM_FROM_KG = 1.0, 0.5
QUICK_WIN_TYPES = frozenset({"enable_caching", "green_routing", "token_optimization"})


@attrs.frozen
class Finding:
    """What one finder found: grams saved over the period and the requests behind them."""

    type: str
    saving_g: float
    affected_requests: int
    title: str
    description: str
    action: str
    code_change: str
    api_endpoint: str
    impact: tuple[str, str, str]  # quality, latency, cost


def priority(kg_per_month: float) -> str:
    """The spec's bands: high above 1 kg CO2e a month, medium from 0.5 to 1, low below."""
    if kg_per_month > HIGH_ABOVE_KG:
        return "high"
    return "medium" if kg_per_month >= MEDIUM_FROM_KG else "low"


def monthly_kg(saving_g: float, days: int) -> float:
    return saving_g / 1000 * DAYS_PER_MONTH / days


# ------------------------------------------------------------------------------- re-pricing


@attrs.frozen
class Swap:
    """Requests of one model that another would serve with less carbon."""

    model: str
    to: str
    requests: int
    saving_g: float


def _live_chat(groups: Sequence[Group]) -> dict[str, tuple[int, Usage, float]]:
    """Per chat model: live requests, their summed usage and their recorded carbon."""
    found: dict[str, tuple[int, Usage, float]] = {}
    for g in groups:
        if g.endpoint != "chat" or g.cache_hit:
            continue
        n, usage, carbon = found.get(g.model, (0, Usage(), 0.0))
        found[g.model] = (n + g.requests, usage + usage_of(g), carbon + g.carbon_gco2e)
    return found


def _swaps(
    catalog: Catalog,
    groups: Sequence[Group],
    alternatives: Callable[[ModelInfo], Sequence[ModelInfo]],
) -> list[Swap]:
    """For each live chat model, the alternative that saves most on the same usage."""
    swaps = []
    for model_id, (requests, usage, carbon) in sorted(_live_chat(groups).items()):
        info = catalog.model(model_id)
        if info is None:
            continue
        best: Swap | None = None
        for alt in alternatives(info):
            repriced = carbon_on(catalog, alt, usage)
            if repriced is None or repriced >= carbon:
                continue
            if best is None or carbon - repriced > best.saving_g:
                best = Swap(model_id, alt.id, requests, carbon - repriced)
        if best is not None:
            swaps.append(best)
    return swaps


def _chat_models(catalog: Catalog) -> list[ModelInfo]:
    return [
        m for m in catalog.models(capability="chat") if m.type == "chat" and m.status == "available"
    ]


def _swap_text(swaps: Sequence[Swap]) -> str:
    return ", ".join(f"{s.model} -> {s.to} ({s.requests} requests)" for s in swaps)


# ---------------------------------------------------------------------------------- finders


def model_downgrade(catalog: Catalog, groups: Sequence[Group]) -> Finding | None:
    def smaller(info: ModelInfo) -> list[ModelInfo]:
        floor = max(QUALITY_FLOOR, info.quality - DOWNGRADE_QUALITY_MARGIN)
        return [
            m
            for m in _chat_models(catalog)
            if m.provider == info.provider and floor <= m.quality < info.quality
        ]

    swaps = _swaps(catalog, groups, smaller)
    if not swaps:
        return None
    top = max(swaps, key=lambda s: s.saving_g)
    return Finding(
        type="model_downgrade",
        saving_g=sum(s.saving_g for s in swaps),
        affected_requests=sum(s.requests for s in swaps),
        title="Use smaller models where their quality suffices",
        description=(
            "These models have a smaller sibling at the same provider within "
            f"{DOWNGRADE_QUALITY_MARGIN} quality points: {_swap_text(swaps)}."
        ),
        action=f"Send requests for {top.model} to {top.to} where its quality suffices",
        code_change=json.dumps({"model": top.to}),
        api_endpoint="POST /v1/chat/completions",
        impact=("moderate", "lower", "lower"),
    )


def green_routing(
    catalog: Catalog, groups: Sequence[Group], active: frozenset[str]
) -> Finding | None:
    candidates = [m for m in _chat_models(catalog) if m.provider in active]
    eligible = [m for m in candidates if m.quality >= QUALITY_FLOOR]
    if not eligible:
        return None
    choice = min(eligible, key=lambda m: (carbon_g(catalog, m), -m.quality, m.id))
    swaps = _swaps(catalog, groups, lambda info: [choice] if choice.id != info.id else [])
    if not swaps:
        return None
    provider = catalog.provider(choice.provider)
    region = provider.grid_region if provider else "unknown"
    return Finding(
        type="green_routing",
        saving_g=sum(s.saving_g for s in swaps),
        affected_requests=sum(s.requests for s in swaps),
        title="Route to the lowest-carbon model with sustain_optimized",
        description=(
            f"sustain_optimized routing would choose {choice.id} ({choice.provider}, grid "
            f"region {region}) for these requests: {_swap_text(swaps)}."
        ),
        action="Set routing_mode to sustain_optimized (or the X-Routing-Mode header)",
        code_change=json.dumps({"model": "auto", "routing_mode": "sustain_optimized"}),
        api_endpoint="POST /v1/chat/completions",
        impact=("minor", "varies", "varies"),
    )


def enable_caching(repeats: Sequence[Repeats]) -> Finding | None:
    found = [r for r in repeats if r.repeats > 0 and r.carbon_gco2e > 0]
    if not found:
        return None
    listing = ", ".join(f"{r.model} ({r.repeats} repeats)" for r in found)
    return Finding(
        type="enable_caching",
        saving_g=sum(r.carbon_gco2e for r in found),
        affected_requests=sum(r.repeats for r in found),
        title="Cache repeated identical requests",
        description=f"Identical chat requests were answered live again: {listing}.",
        action="Enable response caching with a routing rule for the repeated requests",
        code_change=json.dumps(
            {
                "name": "cache repeated prompts",
                "priority": 10,
                "conditions": {},
                "actions": {"cache": {"enabled": True, "ttl_seconds": 3600}},
            }
        ),
        api_endpoint="POST /v1/management/routing-rules",
        impact=("none", "lower", "lower"),
    )


def token_optimization(catalog: Catalog, long: Sequence[LongOutputs]) -> Finding | None:
    saving, affected, models = 0.0, 0, []
    for row in long:
        info = catalog.model(row.model)
        if info is None:
            continue
        carbon = carbon_on(catalog, info, Usage(completion_tokens=row.excess_tokens))
        if carbon:
            saving, affected = saving + carbon, affected + row.requests
            models.append(f"{row.model} ({row.requests} requests)")
    if saving <= 0:
        return None
    return Finding(
        type="token_optimization",
        saving_g=saving,
        affected_requests=affected,
        title="Cap long answers with max_tokens",
        description=(
            f"Answers longer than {LONG_OUTPUT_TOKENS} tokens: {', '.join(models)}; "
            "the saving is the carbon of the tokens beyond that length."
        ),
        action=f"Set max_tokens to {LONG_OUTPUT_TOKENS} and ask for concise answers",
        code_change=json.dumps({"max_tokens": LONG_OUTPUT_TOKENS}),
        api_endpoint="POST /v1/chat/completions",
        impact=("minor", "lower", "lower"),
    )


# ---------------------------------------------------------------------------------- report


@attrs.frozen
class Analysis:
    """What the finders need about a period."""

    groups: Sequence[Group]
    repeats: Sequence[Repeats]
    long_outputs: Sequence[LongOutputs]
    active_providers: frozenset[str]
    days: int


def find_all(catalog: Catalog, analysis: Analysis) -> list[Finding]:
    """Every finding with a saving, largest first."""
    found = [
        model_downgrade(catalog, analysis.groups),
        green_routing(catalog, analysis.groups, analysis.active_providers),
        enable_caching(analysis.repeats),
        token_optimization(catalog, analysis.long_outputs),
    ]
    return sorted((f for f in found if f is not None), key=lambda f: (-f.saving_g, f.type))


def report(catalog: Catalog, analysis: Analysis) -> OpportunitiesReport:
    """The optimisation-opportunities answer."""
    total_g = sum(g.carbon_gco2e for g in analysis.groups)
    analyzed = sum(g.requests for g in analysis.groups)
    findings = find_all(catalog, analysis)
    items = [_item(f, analysis.days, total_g, analyzed) for f in findings]
    saved_g = min(sum(f.saving_g for f in findings), total_g)
    return {
        "opportunities": items,
        "total_potential_savings_kg_co2": monthly_kg(saved_g, analysis.days),
        "total_potential_savings_percent": saved_g / total_g * 100 if total_g else 0.0,
        "analysis_period_days": analysis.days,
        "analyzed_requests": analyzed,
    }


def _item(f: Finding, days: int, total_g: float, analyzed: int) -> Opportunity:
    kg = monthly_kg(f.saving_g, days)
    return {
        "id": f"opp_{f.type}",
        "type": f.type,
        "priority": priority(kg),
        "title": f.title,
        "description": f.description,
        "affected_requests_percent": f.affected_requests / analyzed * 100 if analyzed else 0.0,
        "potential_savings_kg_co2": kg,
        "potential_savings_percent": f.saving_g / total_g * 100 if total_g else 0.0,
        "implementation": {
            "action": f.action,
            "code_change": f.code_change,
            "dashboard_path": f"/console/sustainability#{f.type}",
            "api_endpoint": f.api_endpoint,
        },
        "impact": {
            "quality_impact": f.impact[0],
            "latency_impact": f.impact[1],
            "cost_impact": f.impact[2],
        },
    }


def summary(opportunities: OpportunitiesReport) -> OpportunitiesSummary:
    """The optimisation-summary answer, from an opportunities answer."""
    items = opportunities["opportunities"]
    return {
        "total_opportunities": len(items),
        "total_potential_savings_kg_co2": opportunities["total_potential_savings_kg_co2"],
        "total_potential_savings_percent": opportunities["total_potential_savings_percent"],
        "high_priority_count": sum(1 for i in items if i["priority"] == "high"),
        "quick_wins": [
            i["implementation"]["action"] for i in items if i["type"] in QUICK_WIN_TYPES
        ],
    }


def dashboard_items(opportunities: OpportunitiesReport, limit: int = 5) -> list[DashboardItem]:
    """The dashboard's top opportunities, with the implementation as one sentence."""
    return [
        {
            "type": i["type"],
            "title": i["title"],
            "description": i["description"],
            "potential_savings_kg_co2": i["potential_savings_kg_co2"],
            "implementation": i["implementation"]["action"],
        }
        for i in opportunities["opportunities"][:limit]
    ]
