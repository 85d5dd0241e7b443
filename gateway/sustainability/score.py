"""The efficiency score: three measured components, weighted 0.4 / 0.3 / 0.3, and the
spec's grade bands. Pure and I/O-free; the formulas are published in docs/sustainability.md.

- `carbon_savings_rate` (percent): how much less carbon the period's served requests emitted
  than the same requests served live at the reference data centre (the footprint table's
  default PUE on the world-average grid), cache hits counted at what they would have cost.
  It rewards caching, efficient data centres and clean grids together.
  Score: 100 x value / 30 %, capped at 100.
- `cache_hit_rate` (percent): served chat requests answered from the cache.
  Score: 100 x value / 30 %, capped at 100.
- `grid_efficiency` (gCO2e/kWh): the energy-weighted grid intensity of the live requests.
  Score: 100 at 100 gCO2e/kWh or less, 0 at the world average or more, linear between.

A period without served requests scores 0 on every component (there is nothing to credit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import attrs

from gateway.sustainability.answers import ScoreComponent, Trend
from gateway.sustainability.repricing import reference_carbon, reference_provider
from providers.catalog import Catalog
from providers.footprint import load_footprint_factors
from store.sustainability import Group

WEIGHTS = {"carbon_savings_rate": 0.4, "cache_hit_rate": 0.3, "grid_efficiency": 0.3}
SAVINGS_BENCHMARK_PERCENT = 30.0
CACHE_BENCHMARK_PERCENT = 30.0
GRID_BENCHMARK_G_PER_KWH = 100.0
GRADES: tuple[tuple[int, str], ...] = (
    (90, "A+"),
    (85, "A"),
    (80, "B+"),
    (75, "B"),
    (70, "C+"),
    (65, "C"),
    (60, "D"),
)


@attrs.frozen
class Component:
    name: str
    score: int
    current_value: float
    benchmark: float
    unit: str
    description: str

    def to_api(self) -> ScoreComponent:
        return {
            "score": self.score,
            "weight": WEIGHTS[self.name],
            "description": self.description,
            "current_value": self.current_value,
            "benchmark": self.benchmark,
            "unit": self.unit,
        }


@attrs.frozen
class Score:
    overall: int
    components: tuple[Component, ...]

    @property
    def grade(self) -> str:
        return grade(self.overall)


def grade(score: int) -> str:
    """The spec's bands: 90-100 A+, 85-89 A, 80-84 B+, 75-79 B, 70-74 C+, 65-69 C,
    60-64 D, below 60 F."""
    for floor, letter in GRADES:
        if score >= floor:
            return letter
    return "F"


def _capped(value: float, benchmark: float) -> int:
    return round(max(0.0, min(1.0, value / benchmark)) * 100)


def savings_rate(catalog: Catalog, groups: Sequence[Group]) -> float:
    reference = reference_provider()
    baseline = sum(reference_carbon(catalog, g, reference) for g in groups)
    if baseline <= 0:
        return 0.0
    actual = sum(g.carbon_gco2e for g in groups)
    return max(0.0, (1 - actual / baseline) * 100)


def cache_rate(groups: Sequence[Group]) -> float:
    chat = [g for g in groups if g.endpoint == "chat"]
    total = sum(g.requests for g in chat)
    hits = sum(g.requests for g in chat if g.cache_hit)
    return hits / total * 100 if total else 0.0


def grid_intensity(groups: Sequence[Group]) -> float | None:
    energy = sum(g.energy_kwh for g in groups)
    return sum(g.carbon_gco2e for g in groups) / energy if energy > 0 else None


def grid_score(intensity: float | None) -> int:
    if intensity is None:
        return 0
    world = load_footprint_factors().intensity(load_footprint_factors().default_region)
    span = world - GRID_BENCHMARK_G_PER_KWH
    return round(max(0.0, min(1.0, (world - intensity) / span)) * 100)


def score(catalog: Catalog, groups: Sequence[Group]) -> Score:
    """The period's score from its grouped usage (any grouping: sums are all it reads)."""
    savings = savings_rate(catalog, groups)
    cache = cache_rate(groups)
    intensity = grid_intensity(groups)
    components = (
        Component(
            "carbon_savings_rate",
            _capped(savings, SAVINGS_BENCHMARK_PERCENT),
            savings,
            SAVINGS_BENCHMARK_PERCENT,
            "percent",
            "Carbon avoided against the same requests served live at the reference data "
            "centre (default PUE, world-average grid)",
        ),
        Component(
            "cache_hit_rate",
            _capped(cache, CACHE_BENCHMARK_PERCENT),
            cache,
            CACHE_BENCHMARK_PERCENT,
            "percent",
            "Chat requests answered from the response cache",
        ),
        Component(
            "grid_efficiency",
            grid_score(intensity),
            intensity or 0.0,
            GRID_BENCHMARK_G_PER_KWH,
            "gCO2e/kWh",
            "Energy-weighted carbon intensity of the grids that powered the requests",
        ),
    )
    overall = round(sum(WEIGHTS[c.name] * c.score for c in components))
    return Score(overall, components)


def trend(current: int, previous: int) -> Trend:
    if previous == 0:
        change: float | None = 0.0 if current == 0 else None
    else:
        change = round((current - previous) / previous * 100, 2)
    direction: Literal["improving", "declining", "stable"] = (
        "improving" if current > previous else "declining" if current < previous else "stable"
    )
    return {"direction": direction, "change_percent": change, "previous_score": previous}


def percentile(current: int, history: Sequence[int]) -> int:
    """Where the period's score stands among the workspace's own daily scores of the days
    before it (30 of them, see the service): the share of those days (with traffic) that
    scored no higher."""
    if not history:
        return 0
    return round(sum(1 for s in history if s <= current) / len(history) * 100)


def recommendations(
    result: Score, opportunity_actions: Sequence[str], *, limit: int = 5
) -> list[str]:
    """A sentence per component below its benchmark, then the top opportunities' actions."""
    advice: dict[str, Callable[[Component], str]] = {
        "carbon_savings_rate": lambda c: (
            f"Carbon savings are {c.current_value:.1f}% against a benchmark of "
            f"{c.benchmark:.0f}%: prefer low-carbon providers and cache repeated requests."
        ),
        "cache_hit_rate": lambda c: (
            f"Only {c.current_value:.1f}% of chat requests hit the cache (benchmark "
            f"{c.benchmark:.0f}%): enable caching for repeated prompts."
        ),
        "grid_efficiency": lambda c: (
            f"Requests ran on grids averaging {c.current_value:.0f} gCO2e/kWh (benchmark "
            f"{c.benchmark:.0f}): route to providers in low-carbon regions "
            "(routing_mode sustain_optimized)."
        ),
    }
    found = [advice[c.name](c) for c in result.components if c.score < 100]
    return (found + list(opportunity_actions))[:limit]
