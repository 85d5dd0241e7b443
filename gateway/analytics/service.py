"""The analytics pages: read the rollups of one workspace over a period, render (orchestration
only). Every page first flushes the usage writer, so a request answered before the page
was asked for is counted in it.

Cancellation: a page stops between its database reads; nothing is written.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import attrs
from sqlite_utils import Database

from gateway.analytics import answers, render
from gateway.analytics.input import AnalyticsQuery
from gateway.analytics.live import LiveFigures
from gateway.analytics.services import AnalyticsServices
from gateway.platform.web import iso
from store import analytics as analytics_store
from store.analytics import Dimension, Group
from store.latency_sketch import Counts


@attrs.frozen
class Scope:
    """Whose figures over which period: `[since, until)` in epoch seconds."""

    workspace_id: str
    query: AnalyticsQuery

    @property
    def since(self) -> int:
        return int(self.query.period.since.timestamp())

    @property
    def until(self) -> int:
        return int(self.query.period.until.timestamp())


def today() -> date:
    return datetime.now(UTC).date()


def _groups(
    d: Database,
    scope: Scope,
    by: tuple[Dimension, ...] = (),
    bucket: analytics_store.Bucket | None = None,
) -> list[Group]:
    return analytics_store.rollup_groups(
        d,
        workspace_id=scope.workspace_id,
        since_epoch=scope.since,
        until_epoch=scope.until,
        by=by,
        bucket=bucket,
    )


def _sketches(d: Database, scope: Scope) -> dict[str, Counts]:
    return analytics_store.latency_sketches(
        d, workspace_id=scope.workspace_id, since_epoch=scope.since, until_epoch=scope.until
    )


def _series(d: Database, scope: Scope) -> list[tuple[Any, ...]]:
    dimension = scope.query.dimension
    return analytics_store.series_rows(
        d,
        workspace_id=scope.workspace_id,
        since_epoch=scope.since,
        until_epoch=scope.until,
        bucket=scope.query.granularity,
        by=(dimension,) if dimension else (),
    )


# Each page reads what it needs in one trip to the database thread.


async def usage(analytics: AnalyticsServices, scope: Scope) -> answers.UsagePage:
    await analytics.flush_usage()
    series, sketches = await analytics.db.run(lambda d: (_series(d, scope), _sketches(d, scope)))
    return render.usage_page(scope.query, series, analytics_store.merge_sketches(sketches))


async def models(analytics: AnalyticsServices, scope: Scope) -> answers.ModelsPage:
    await analytics.flush_usage()
    groups = await analytics.db.run(lambda d: _groups(d, scope, ("model", "provider")))
    return render.models_page(scope.query, groups)


async def api_keys(analytics: AnalyticsServices, scope: Scope) -> answers.ApiKeysPage:
    await analytics.flush_usage()
    groups, names = await analytics.db.run(
        lambda d: (_groups(d, scope, ("key_id",)), analytics_store.key_names(d, scope.workspace_id))
    )
    return render.api_keys_page(scope.query, groups, names)


async def costs(analytics: AnalyticsServices, scope: Scope) -> answers.CostsPage:
    await analytics.flush_usage()
    per_endpoint, series = await analytics.db.run(
        lambda d: (
            _groups(d, scope, ("provider", "endpoint")),
            _groups(d, scope, (), scope.query.granularity),
        )
    )
    return render.costs_page(scope.query, per_endpoint, series)


async def performance(analytics: AnalyticsServices, scope: Scope) -> answers.PerformancePage:
    await analytics.flush_usage()
    groups, sketches = await analytics.db.run(
        lambda d: (_groups(d, scope, ("provider",)), _sketches(d, scope))
    )
    merged = analytics_store.merge_sketches(sketches)
    return render.performance_page(
        scope.query, render.by_label(groups), sketches, merged, _elapsed_minutes(scope)
    )


def _elapsed_minutes(scope: Scope) -> float:
    """Minutes of the period that have begun (a period reaching into the future counts up
    to now), at least one: the denominator of throughput."""
    now = datetime.now(UTC).timestamp()
    end = min(float(scope.until), now)
    return max(1.0, (end - scope.since) / 60)


async def errors(analytics: AnalyticsServices, scope: Scope) -> answers.ErrorsPage:
    await analytics.flush_usage()
    groups = await analytics.db.run(lambda d: _groups(d, scope, ("provider", "model")))
    return render.errors_page(scope.query, groups)


async def cache(analytics: AnalyticsServices, scope: Scope) -> answers.CachePage:
    await analytics.flush_usage()
    groups = await analytics.db.run(lambda d: _groups(d, scope, ("endpoint", "model")))
    chat = render.by_label([g for g in groups if g.labels[0] == "chat"], 1)
    return render.cache_page(scope.query, chat)


async def realtime(
    analytics: AnalyticsServices, workspace_id: str, *, active_requests: int
) -> answers.RealtimePage:
    """The last minute from the raw log, and the live process: requests in flight, requests
    waiting for rate-limit capacity, and each configured provider's health. With a shared
    server (`gateway.analytics.live`), the last minute and the gauges are every worker's
    and node's; if it cannot answer, this node's."""
    live = analytics.live
    if live is not None:
        shared = await live.read(workspace_id, (active_requests, queue_depth(analytics)))
        if shared is not None:
            return _realtime_page(analytics, workspace_id, shared)
    await analytics.flush_usage()
    now = datetime.now(UTC)
    since = (now - timedelta(minutes=1)).timestamp()
    recent = await analytics.db.run(
        lambda d: analytics_store.recent_figures(d, workspace_id=workspace_id, since_epoch=since)
    )
    return {
        "timestamp": iso(now),
        "last_minute": {
            "requests": recent.requests,
            "tokens": recent.tokens,
            "cost_usd": render.usd(recent.cost_usd),
            "avg_latency_ms": render.ms(recent.avg_latency_ms),
        },
        "active_requests": active_requests,
        "queue_depth": queue_depth(analytics),
        "provider_status": _provider_status(analytics, workspace_id),
    }


def _realtime_page(
    analytics: AnalyticsServices, workspace_id: str, live: LiveFigures
) -> answers.RealtimePage:
    return {
        "timestamp": iso(datetime.now(UTC)),
        "last_minute": {
            "requests": live.requests,
            "tokens": live.tokens,
            "cost_usd": render.usd(live.cost_usd),
            "avg_latency_ms": render.ms(live.avg_latency_ms),
        },
        "active_requests": live.active_requests,
        "queue_depth": live.queue_depth,
        "provider_status": _provider_status(analytics, workspace_id),
    }


def queue_depth(analytics: AnalyticsServices) -> int:
    """Requests of this process waiting for rate-limit capacity (strategy `queue`)."""
    return analytics.queue_depth()


def _provider_status(analytics: AnalyticsServices, workspace_id: str) -> dict[str, str]:
    """As `/v1/health/detailed` judges them: disabled, healthy or degraded (a provider
    without traffic or probes yet counts as healthy)."""
    statuses = {}
    for pid, entry in analytics.registry.configured(workspace_id).items():
        status = analytics.health.figures(workspace_id, pid).status if entry.active else "disabled"
        statuses[pid] = "healthy" if status == "unknown" else status
    return statuses
