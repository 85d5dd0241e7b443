"""The sustainability reports: read the grouped usage of the caller's workspace, compose the
answers. Orchestration only; the figures, the score and the opportunities are pure modules.

Each answer is built from a few grouped queries run off the event loop on the store's
thread; cancelling the request abandons the answer (the queries only read).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta

from gateway.platform.auth import Principal
from gateway.sustainability import figures, opportunities, score
from gateway.sustainability.answers import (
    Dashboard,
    Efficiency,
    EfficiencyReport,
    OpportunitiesReport,
    OpportunitiesSummary,
    PeriodObject,
)
from gateway.sustainability.period import (
    Filters,
    Period,
    parse_days,
    parse_filters,
    parse_period,
)
from gateway.sustainability.services import SustainabilityServices
from store import sustainability as store
from store.sustainability import Group, Scope

HISTORY_DAYS = 30  # the percentile's history: each day of it is grouped and scored


def today() -> date:
    return datetime.now(UTC).date()


def _scope(principal: Principal, period: Period, filters: Filters) -> Scope:
    return Scope(
        workspace_id=principal.workspace_id,
        start=period.start,
        end=period.end,
        project=filters.project,
        team=filters.team,
    )


async def _groups(
    sustainability: SustainabilityServices,
    principal: Principal,
    period: Period,
    filters: Filters,
    *,
    by_day: bool,
) -> list[Group]:
    scope = _scope(principal, period, filters)
    return await sustainability.db.run(lambda d: store.groups(d, scope, by_day=by_day))


async def _analysis(
    sustainability: SustainabilityServices,
    principal: Principal,
    period: Period,
    filters: Filters,
    groups: list[Group] | None = None,
) -> opportunities.Analysis:
    """What the finders need; `groups` when the caller has already read the period's."""
    scope = _scope(principal, period, filters)
    if groups is None:
        groups = await sustainability.db.run(lambda d: store.groups(d, scope))
    repeats = await sustainability.db.run(lambda d: store.repeated_prompts(d, scope))
    threshold = opportunities.LONG_OUTPUT_TOKENS
    long = await sustainability.db.run(lambda d: store.long_outputs(d, scope, threshold))
    return opportunities.Analysis(
        groups=groups,
        repeats=repeats,
        long_outputs=long,
        active_providers=sustainability.registry.active_ids(principal.workspace_id),
        days=period.days,
    )


async def opportunities_report(
    sustainability: SustainabilityServices, principal: Principal, args: Mapping[str, str]
) -> OpportunitiesReport:
    period = parse_days(args, today())
    analysis = await _analysis(sustainability, principal, period, parse_filters(args))
    return opportunities.report(sustainability.catalog, analysis)


async def optimization_summary(
    sustainability: SustainabilityServices, principal: Principal, args: Mapping[str, str]
) -> OpportunitiesSummary:
    return opportunities.summary(await opportunities_report(sustainability, principal, args))


async def _efficiency(
    sustainability: SustainabilityServices,
    principal: Principal,
    period: Period,
    filters: Filters,
    current: list[Group],
) -> tuple[score.Score, int]:
    """The period's score (from its groups) and its percentile in the workspace's own
    daily history."""
    result = score.score(sustainability.catalog, current)
    history = Period(period.first - timedelta(days=HISTORY_DAYS), period.first - timedelta(days=1))
    daily = await _groups(sustainability, principal, history, filters, by_day=True)
    return result, score.percentile(result.overall, _daily_scores(sustainability, daily))


def _daily_scores(sustainability: SustainabilityServices, groups: Sequence[Group]) -> list[int]:
    by_day: dict[str, list[Group]] = defaultdict(list)
    for group in groups:
        by_day[group.day or ""].append(group)
    return [score.score(sustainability.catalog, day).overall for day in by_day.values()]


def _efficiency_object(result: score.Score, percentile: int) -> Efficiency:
    parts = {c.name: c.to_api() for c in result.components}
    return {
        "overall_score": result.overall,
        "grade": result.grade,
        "percentile": percentile,
        "components": {
            "carbon_savings_rate": parts["carbon_savings_rate"],
            "cache_hit_rate": parts["cache_hit_rate"],
            "grid_efficiency": parts["grid_efficiency"],
        },
    }


async def efficiency_score(
    sustainability: SustainabilityServices, principal: Principal, args: Mapping[str, str]
) -> EfficiencyReport:
    period, filters = parse_period(args, today()), parse_filters(args)
    current = await _groups(sustainability, principal, period, filters, by_day=False)
    result, percentile = await _efficiency(sustainability, principal, period, filters, current)
    previous = await _groups(sustainability, principal, period.previous(), filters, by_day=False)
    before = score.score(sustainability.catalog, previous)
    actions: list[str] = []
    if current:
        analysis = await _analysis(sustainability, principal, period, filters, current)
        found = opportunities.find_all(sustainability.catalog, analysis)
        actions = [f.action for f in found]
    efficiency = _efficiency_object(result, percentile)
    return {
        "overall_score": efficiency["overall_score"],
        "grade": efficiency["grade"],
        "percentile": efficiency["percentile"],
        "components": efficiency["components"],
        "period": _period_object(period),
        "trend": score.trend(result.overall, before.overall),
        "recommendations": score.recommendations(result, actions) if current else [],
    }


async def dashboard(
    sustainability: SustainabilityServices, principal: Principal, args: Mapping[str, str]
) -> Dashboard:
    period, filters = parse_period(args, today()), parse_filters(args)
    daily = await _groups(sustainability, principal, period, filters, by_day=True)
    current = figures.without_days(daily)
    result, percentile = await _efficiency(sustainability, principal, period, filters, current)
    previous = await _groups(sustainability, principal, period.previous(), filters, by_day=False)
    analysis = await _analysis(sustainability, principal, period, filters, current)
    found = opportunities.report(sustainability.catalog, analysis)
    return {
        "period": _period_object(period),
        "summary": figures.summary(current, previous, result.overall),
        "time_series": figures.time_series(daily, period.dates()),
        "efficiency": _efficiency_object(result, percentile),
        "opportunities": opportunities.dashboard_items(found),
    }


def _period_object(period: Period) -> PeriodObject:
    return {
        "start_date": period.first.isoformat(),
        "end_date": period.last.isoformat(),
        "days": period.days,
    }
