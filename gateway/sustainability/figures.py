"""The dashboard's measured figures: totals, averages, the trend, the breakdowns and the
daily series, from the grouped usage sums. Pure and I/O-free.

Carbon is in gCO2e and energy in kWh, as each request's `_gateway` object reports them.
Following the Green Software Foundation's SCI, carbon is also given per functional unit:
per request and per 1,000 tokens.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import attrs

from gateway.sustainability.answers import DashboardSummary, DayPoint
from store.sustainability import Group


def without_days(groups: Iterable[Group]) -> list[Group]:
    """Daily groups summed over their days: one read of the period serves both the daily
    series and the period's figures."""
    merged: dict[tuple[str, str, str, bool], Group] = {}
    for g in groups:
        key = (g.model, g.provider, g.endpoint, g.cache_hit)
        seen = merged.get(key)
        merged[key] = (
            attrs.evolve(g, day=None)
            if seen is None
            else attrs.evolve(
                seen,
                requests=seen.requests + g.requests,
                prompt_tokens=seen.prompt_tokens + g.prompt_tokens,
                completion_tokens=seen.completion_tokens + g.completion_tokens,
                audio_seconds=seen.audio_seconds + g.audio_seconds,
                characters=seen.characters + g.characters,
                pages=seen.pages + g.pages,
                searches=seen.searches + g.searches,
                energy_kwh=seen.energy_kwh + g.energy_kwh,
                carbon_gco2e=seen.carbon_gco2e + g.carbon_gco2e,
            )
        )
    return [merged[key] for key in sorted(merged)]


def total_carbon(groups: Iterable[Group]) -> float:
    return sum(g.carbon_gco2e for g in groups)


def trend_percent(current: float, previous: float) -> float | None:
    """Change against the previous period in percent; 0 when both are zero and None when
    only the previous one is (a rise from nothing has no percentage)."""
    if previous == 0:
        return 0.0 if current == 0 else None
    return round((current - previous) / previous * 100, 2)


def summary(groups: Sequence[Group], previous: Sequence[Group], score: int) -> DashboardSummary:
    """The dashboard's totals, with the period's efficiency `score`."""
    carbon = total_carbon(groups)
    requests = sum(g.requests for g in groups)
    tokens = sum(g.prompt_tokens + g.completion_tokens for g in groups)
    return {
        "total_carbon_gco2e": carbon,
        "total_energy_kwh": sum(g.energy_kwh for g in groups),
        "total_requests": requests,
        "avg_carbon_per_request_gco2e": carbon / requests if requests else 0.0,
        "carbon_per_1k_tokens_gco2e": carbon / tokens * 1000 if tokens else 0.0,
        "carbon_trend_percent": trend_percent(carbon, total_carbon(previous)),
        "breakdown_by_model": [
            {"model": label, "carbon_gco2e": carbon, "percentage": share}
            for label, carbon, share in breakdown(groups, lambda g: g.model)
        ],
        "breakdown_by_provider": [
            {"provider": label, "carbon_gco2e": carbon, "percentage": share}
            for label, carbon, share in breakdown(groups, lambda g: g.provider)
        ],
        "efficiency_score": score,
    }


def breakdown(
    groups: Iterable[Group], key: Callable[[Group], str]
) -> list[tuple[str, float, float]]:
    """Carbon per model (or provider) as (label, grams, percentage), largest first, with
    percentages that add up to exactly 100 (or are all 0 when nothing emitted carbon)."""
    sums: dict[str, float] = defaultdict(float)
    for group in groups:
        sums[key(group)] += group.carbon_gco2e
    ordered = sorted(sums.items(), key=lambda item: (-item[1], item[0]))
    shares = percentages([carbon for _, carbon in ordered])
    return [(label, carbon, share) for (label, carbon), share in zip(ordered, shares, strict=True)]


def percentages(values: Sequence[float]) -> list[float]:
    """Shares of the total in percent with two decimals, summing to exactly 100 (largest
    remainders get the spare hundredths)."""
    total = sum(values)
    if total <= 0:
        return [0.0 for _ in values]
    exact = [v / total * 10_000 for v in values]
    floors = [math.floor(x) for x in exact]
    spare = 10_000 - sum(floors)
    by_remainder = sorted(range(len(values)), key=lambda i: (floors[i] - exact[i], i))
    for i in by_remainder[:spare]:
        floors[i] += 1
    return [f / 100 for f in floors]


def time_series(groups: Iterable[Group], dates: Sequence[str]) -> list[DayPoint]:
    """One point per day of the period, days without traffic at zero."""
    carbon: dict[str, float] = dict.fromkeys(dates, 0.0)
    energy: dict[str, float] = dict.fromkeys(dates, 0.0)
    requests: dict[str, int] = dict.fromkeys(dates, 0)
    for group in groups:
        day = group.day or ""
        if day in carbon:
            carbon[day] += group.carbon_gco2e
            energy[day] += group.energy_kwh
            requests[day] += group.requests
    return [
        {"date": d, "carbon_gco2e": carbon[d], "energy_kwh": energy[d], "requests": requests[d]}
        for d in dates
    ]
