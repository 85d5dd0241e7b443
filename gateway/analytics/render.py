"""The analytics pages' JSON, from rollup sums and latency sketches (pure).

Conventions (docs/analytics.md): costs in USD through `round_cost` (15 significant digits,
never fewer digits than the prices have); rates are shares from 0 to 1 and null when there
were no requests to share; latencies in milliseconds, of successful requests, null without
any. `cost_usd` is what was billed, except on the costs page, where it is the list price
before the response cache (`effective_cost_usd` is what was billed, `cache_savings_usd`
the difference).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from gateway.analytics import answers
from gateway.analytics.input import AnalyticsQuery
from providers.catalog import round_cost
from store.analytics import Group, Sums
from store.latency_sketch import Counts, quantile

Sketch = Counts
CATEGORIES = ("chat", "embeddings", "audio", "other")


def category(endpoint: str) -> str:
    """The cost category of an endpoint: chat, embeddings (and rerank), audio, other."""
    if endpoint == "chat":
        return "chat"
    if endpoint in ("embeddings", "rerank"):
        return "embeddings"
    if endpoint.startswith("audio"):
        return "audio"
    return "other"


def usd(value: float) -> float:
    return round_cost(value)


def ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None


def ms(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def avg_latency(sums: Sums) -> float | None:
    return ms(sums.latency_sum_ms / sums.successes) if sums.successes else None


def total(groups: Iterable[Group]) -> Sums:
    return total_of(group.sums for group in groups)


def by_label(groups: Iterable[Group], index: int = 0) -> dict[str, Sums]:
    """Sums per the label at `index` (other labels added together)."""
    result: dict[str, Sums] = {}
    for group in groups:
        label = group.labels[index]
        result[label] = result.get(label, Sums()) + group.sums
    return result


def percentiles(sketch: Sketch) -> answers.Percentiles:
    return {
        "p50": ms(quantile(sketch, 0.5)),
        "p95": ms(quantile(sketch, 0.95)),
        "p99": ms(quantile(sketch, 0.99)),
    }


def usage_page(
    query: AnalyticsQuery, series: Sequence[tuple[Any, ...]], sketch: Sketch
) -> answers.UsagePage:
    """/usage: totals with tokens and latency percentiles, and the series per bucket (and
    group, when `group_by`): `series` rows are (bucket, [group], requests, prompt tokens,
    completion tokens, cost), built into points with no object in between (an hourly
    series of 30 days has thousands)."""
    width = 2 if query.group_by is not None else 1
    columns = list(zip(*series, strict=True))[width:] if series else [(), (), (), ()]
    requests, prompt, completion, cost = (sum(column) for column in columns)
    return {
        "period": query.period.render(),
        "granularity": query.granularity,
        "group_by": query.group_by,
        "totals": {
            "requests": requests,
            "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
            "cost_usd": usd(cost),
            "latency_ms": percentiles(sketch),
        },
        "data": _usage_points(query, series),
    }


def _usage_points(
    query: AnalyticsQuery, series: Sequence[tuple[Any, ...]]
) -> list[answers.UsagePoint]:
    if query.group_by is None:
        return [
            {"date": day, "requests": n, "tokens": p + c, "cost_usd": usd(cost)}
            for day, n, p, c, cost in series
        ]
    name = query.dimension
    points: list[answers.UsagePoint] = []
    for day, label, n, p, c, cost in series:
        point: answers.UsagePoint = {
            "date": day,
            "requests": n,
            "tokens": p + c,
            "cost_usd": usd(cost),
        }
        if name == "model" or name == "provider" or name == "key_id":
            point[name] = label
        points.append(point)
    return points


def models_page(query: AnalyticsQuery, groups: Sequence[Group]) -> answers.ModelsPage:
    """/usage/models: one entry per (model, provider), most requested first."""
    ordered = sorted(groups, key=lambda g: (-g.sums.requests, g.labels))
    return {
        "period": query.period.render(),
        "models": [
            {
                "model": group.labels[0],
                "provider": group.labels[1],
                "requests": group.sums.requests,
                "tokens": {
                    "prompt": group.sums.prompt_tokens,
                    "completion": group.sums.completion_tokens,
                },
                "cost_usd": usd(group.sums.cost_usd),
                "avg_latency_ms": avg_latency(group.sums),
            }
            for group in ordered
        ],
    }


def api_keys_page(
    query: AnalyticsQuery, groups: Sequence[Group], names: Mapping[str, str]
) -> answers.ApiKeysPage:
    """/usage/api-keys: one entry per key, most requested first; a deleted key's name is
    null."""
    ordered = sorted(groups, key=lambda g: (-g.sums.requests, g.labels))
    return {
        "period": query.period.render(),
        "api_keys": [
            {
                "key_id": group.labels[0],
                "name": names.get(group.labels[0]),
                "requests": group.sums.requests,
                "tokens": group.sums.tokens,
                "cost_usd": usd(group.sums.cost_usd),
                "rate_limit_hits": group.sums.rate_limit_hits,
            }
            for group in ordered
        ],
    }


def _cost(sums: Sums) -> answers.CostFigures:
    return {
        "cost_usd": usd(sums.cost_usd + sums.cache_savings_usd),
        "cache_savings_usd": usd(sums.cache_savings_usd),
        "effective_cost_usd": usd(sums.cost_usd),
    }


def costs_page(
    query: AnalyticsQuery, per_endpoint: Sequence[Group], series: Sequence[Group]
) -> answers.CostsPage:
    """/costs: `per_endpoint` grouped by (provider, endpoint), `series` by bucket."""
    by_category = {name: Sums() for name in CATEGORIES}
    for group in per_endpoint:
        name = category(group.labels[1])
        by_category[name] = by_category[name] + group.sums
    return {
        "period": query.period.render(),
        "granularity": query.granularity,
        "totals": _cost(total(per_endpoint)),
        "by_provider": {p: _cost(s) for p, s in by_label(per_endpoint).items()},
        "by_category": {
            "chat": _cost(by_category["chat"]),
            "embeddings": _cost(by_category["embeddings"]),
            "audio": _cost(by_category["audio"]),
            "other": _cost(by_category["other"]),
        },
        "data": [
            {
                "date": group.labels[0],
                "cost_usd": usd(group.sums.cost_usd + group.sums.cache_savings_usd),
                "cache_savings_usd": usd(group.sums.cache_savings_usd),
                "effective_cost_usd": usd(group.sums.cost_usd),
            }
            for group in series
        ],
    }


def performance_page(
    query: AnalyticsQuery,
    per_provider: Mapping[str, Sums],
    sketches: Mapping[str, Sketch],
    merged: Sketch,
    minutes: float,
) -> answers.PerformancePage:
    """/performance over `minutes` of the period (its elapsed part)."""
    totals = total_of(per_provider.values())
    latency = percentiles(merged)
    return {
        "period": query.period.render(),
        "latency": {
            "p50_ms": latency["p50"],
            "p95_ms": latency["p95"],
            "p99_ms": latency["p99"],
            "avg_ms": avg_latency(totals),
        },
        "throughput": {
            "requests_per_minute": round(totals.requests / minutes, 6),
            "tokens_per_minute": round(totals.tokens / minutes, 6),
        },
        "reliability": _reliability(totals),
        "by_provider": {
            provider: {
                "requests": sums.requests,
                "latency_p50_ms": ms(_median(sketches, provider)),
                "success_rate": ratio(sums.successes, sums.requests),
            }
            for provider, sums in sorted(per_provider.items())
        },
    }


def _median(sketches: Mapping[str, Sketch], provider: str) -> float | None:
    counts = sketches.get(provider)
    return None if counts is None else quantile(counts, 0.5)


def total_of(sums: Iterable[Sums]) -> Sums:
    """Column by column (one `Sums` built, not one per addition)."""
    columns = list(zip(*map(attrs.astuple, sums), strict=True))
    return Sums(*map(sum, columns)) if columns else Sums()


def _reliability(sums: Sums) -> answers.Reliability:
    return {
        "success_rate": ratio(sums.successes, sums.requests),
        "error_rate": ratio(sums.errors, sums.requests),
        "timeout_rate": ratio(sums.timeouts, sums.requests),
    }


def _by_type(sums: Sums) -> answers.ErrorsByType:
    return {
        "rate_limit": sums.rate_limit_hits,
        "timeout": sums.timeouts,
        "provider_error": sums.provider_errors,
        "invalid_request": sums.invalid_requests,
    }


def _errors_of(sums: Sums) -> answers.ErrorFigures:
    return {
        "requests": sums.requests,
        "total_errors": sums.errors,
        "error_rate": ratio(sums.errors, sums.requests),
        "by_type": _by_type(sums),
    }


def errors_page(query: AnalyticsQuery, groups: Sequence[Group]) -> answers.ErrorsPage:
    """/errors: `groups` by (provider, model)."""
    totals = total(groups)
    return {
        "period": query.period.render(),
        "requests": totals.requests,
        "total_errors": totals.errors,
        "error_rate": ratio(totals.errors, totals.requests),
        "by_type": _by_type(totals),
        "by_provider": {p: _errors_of(s) for p, s in by_label(groups, 0).items()},
        "by_model": {m: _errors_of(s) for m, s in sorted(by_label(groups, 1).items())},
    }


def _cache_of(sums: Sums) -> answers.CacheFigures:
    misses = sums.successes - sums.cache_hits
    return {
        "hits": sums.cache_hits,
        "misses": misses,
        "hit_rate": ratio(sums.cache_hits, sums.successes),
        "tokens_saved": sums.cache_tokens_saved,
        "cost_saved_usd": usd(sums.cache_savings_usd),
    }


def cache_page(query: AnalyticsQuery, chat_by_model: Mapping[str, Sums]) -> answers.CachePage:
    """/cache over the successful chat answers (the ones the response cache can serve):
    a hit came from the cache, a miss from a provider."""
    totals = _cache_of(total_of(chat_by_model.values()))
    return {
        "period": query.period.render(),
        "totals": {
            "cache_hits": totals["hits"],
            "cache_misses": totals["misses"],
            "hit_rate": totals["hit_rate"],
            "tokens_saved": totals["tokens_saved"],
            "cost_saved_usd": totals["cost_saved_usd"],
        },
        "by_model": {model: _cache_of(s) for model, s in sorted(chat_by_model.items())},
    }
