"""GET /v1/management/analytics/* (usage, models, api-keys, costs, performance, errors,
cache, realtime) and the analytics exports (create, read, download).

Reads need `view_analytics`, exports `export_data`. The workspace is the caller's (or the
one named by `X-Workspace-ID` or the `workspace_id` query parameter, if the caller may act
in it; one it may not answers 404 like an unknown one). Each route declares its query,
body and answer (`gateway.analytics.input`, `gateway.analytics.answers`): the server reads
them with `gateway.platform.shapes`, and the OpenAPI document is written from them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
from quart import Blueprint, Response, request

from gateway.analytics import answers, exports, service
from gateway.analytics.export_file import CONTENT_TYPES
from gateway.analytics.input import (
    ExportRequest,
    ExportsQuery,
    PeriodQuery,
    SeriesQuery,
    UsageQuery,
    WorkspaceQuery,
    analytics_query,
)
from gateway.analytics.services import AnalyticsServices
from gateway.platform import jsonio
from gateway.platform.answers import ListOf, listing
from gateway.platform.apidoc import Content, operation
from gateway.platform.auth import Principal
from gateway.platform.roles import Action
from gateway.platform.shapes import parse, parse_query
from gateway.platform.web import json_response, read_object

A = "/v1/management/analytics"
TAG = "analytics"
Page = Callable[[AnalyticsServices, service.Scope], Awaitable[Mapping[str, Any]]]
View = Callable[[], Awaitable[Response]]
PERIOD_ERRORS: Mapping[int, str] = {400: "invalid_period"}
EXPORT_ERRORS: Mapping[int, str] = {404: "export_not_found"}
# The export file in each format's media type (without its parameters): a JSON export
# is one object (an array per section), the others a file of their own.
DOWNLOADS = tuple(
    Content(kind.split(";")[0], dict[str, Any] if fmt == "json" else None, f"A {fmt} export")
    for fmt, kind in CONTENT_TYPES.items()
)


async def _caller(analytics: AnalyticsServices, action: Action) -> Principal:
    principal = await analytics.auth.manager(action)
    return principal.in_workspace(request.args.get("workspace_id") or None)


def _base_url() -> str:
    return request.host_url.rstrip("/")


def _page(summary: str, query: type, answer: type) -> Callable[[View], View]:
    return operation(
        summary,
        TAG,
        query=query,
        answer=answer,
        errors=PERIOD_ERRORS,
        permission="view_analytics",
    )


@attrs.frozen
class Report:
    """One read-only analytics page: where it is served, what it declares, what reads it."""

    endpoint: str
    path: str
    summary: str
    query: type[PeriodQuery | SeriesQuery | UsageQuery]
    answer: type
    read: Page


REPORTS = (
    Report(
        "usage",
        "/usage",
        "Requests, tokens, cost and latency percentiles over a period, as a series",
        UsageQuery,
        answers.UsagePage,
        service.usage,
    ),
    Report(
        "usage_models",
        "/usage/models",
        "Usage per model and provider",
        PeriodQuery,
        answers.ModelsPage,
        service.models,
    ),
    Report(
        "usage_api_keys",
        "/usage/api-keys",
        "Usage per API key, with the requests its limits refused",
        PeriodQuery,
        answers.ApiKeysPage,
        service.api_keys,
    ),
    Report(
        "costs",
        "/costs",
        "Costs at list prices, what the response cache saved, and what was billed",
        SeriesQuery,
        answers.CostsPage,
        service.costs,
    ),
    Report(
        "performance",
        "/performance",
        "Latency percentiles, throughput and reliability, overall and per provider",
        PeriodQuery,
        answers.PerformancePage,
        service.performance,
    ),
    Report(
        "errors",
        "/errors",
        "Failed and refused requests by type, provider and model",
        PeriodQuery,
        answers.ErrorsPage,
        service.errors,
    ),
    Report(
        "cache",
        "/cache",
        "Response cache hits and misses of chat answers, and what the hits saved",
        PeriodQuery,
        answers.CachePage,
        service.cache,
    ),
)


def analytics_blueprint(analytics: AnalyticsServices) -> Blueprint:
    """The analytics routes: the period reports, the live page, the exports."""
    bp = Blueprint("analytics", __name__)
    for report in REPORTS:
        bp.get(f"{A}{report.path}", endpoint=report.endpoint)(_report_view(analytics, report))
    _realtime_route(bp, analytics)
    _export_routes(bp, analytics)
    _export_file_routes(bp, analytics)
    return bp


def _report_view(analytics: AnalyticsServices, report: Report) -> View:
    """The view of one period report: the caller's workspace, the period asked, the figures."""

    @_page(report.summary, report.query, report.answer)
    async def view() -> Response:
        principal = await _caller(analytics, "view_analytics")
        asked = analytics_query(parse_query(report.query, request.args), today=service.today())
        figures = await report.read(analytics, service.Scope(principal.workspace_id, asked))
        # orjson (`jsonio.dumps`): an hourly series of 30 days is ~450 kB of numbers, which
        # the stdlib encoder takes several times longer to write.
        return Response(jsonio.dumps(figures), content_type="application/json")

    return view


def _realtime_route(bp: Blueprint, analytics: AnalyticsServices) -> None:
    @bp.get(f"{A}/realtime")
    @operation(
        "The last minute, the requests in flight and waiting, and provider status",
        TAG,
        query=WorkspaceQuery,
        answer=answers.RealtimePage,
        permission="view_analytics",
    )
    async def realtime() -> Response:
        principal = await _caller(analytics, "view_analytics")
        parse_query(WorkspaceQuery, request.args)
        active = analytics.drain.in_flight
        figures = await service.realtime(analytics, principal.workspace_id, active_requests=active)
        return json_response(figures)


def _export_routes(bp: Blueprint, analytics: AnalyticsServices) -> None:
    """Ordering an export, and the list to follow them."""

    @bp.post(f"{A}/export")
    @operation(
        "Export usage, costs and errors of a period as CSV, JSON or Parquet (built in the "
        "background)",
        TAG,
        query=WorkspaceQuery,
        body=ExportRequest,
        answer=answers.AnalyticsExport,
        status=202,
        errors={**PERIOD_ERRORS, 501: "feature_not_installed"},
        permission="export_data",
    )
    async def create_export() -> Response:
        principal = await _caller(analytics, "export_data")
        parse_query(WorkspaceQuery, request.args)
        asked = parse(ExportRequest, await read_object())
        record = await exports.create(
            analytics, principal.workspace_id, asked, today=service.today()
        )
        return json_response(exports.render(record, _base_url()), status=202)

    @bp.get(f"{A}/export")
    @operation(
        "The workspace's latest exports, newest first (to follow and download them)",
        TAG,
        query=ExportsQuery,
        answer=ListOf[answers.AnalyticsExport],
        permission="export_data",
    )
    async def list_exports() -> Response:
        principal = await _caller(analytics, "export_data")
        found = await exports.recent(analytics, principal, parse_query(ExportsQuery, request.args))
        base = _base_url()
        return json_response(listing([exports.render(r, base) for r in found]))


def _export_file_routes(bp: Blueprint, analytics: AnalyticsServices) -> None:
    """One export: its state, then its file."""

    @bp.get(f"{A}/export/<export_id>")
    @operation(
        "An export: processing, then complete with its download address and expiry",
        TAG,
        query=WorkspaceQuery,
        answer=answers.AnalyticsExport,
        errors=EXPORT_ERRORS,
        permission="export_data",
    )
    async def get_export(export_id: str) -> Response:
        principal = await _caller(analytics, "export_data")
        parse_query(WorkspaceQuery, request.args)
        record = await exports.find(analytics, principal, export_id)
        return json_response(exports.render(record, _base_url()))

    @bp.get(f"{A}/export/<export_id>/download")
    @operation(
        "The export's file (until it expires: then 410)",
        TAG,
        query=WorkspaceQuery,
        answer=DOWNLOADS,
        errors={
            **EXPORT_ERRORS,
            409: "export_not_ready",
            410: "export_expired",
        },
        permission="export_data",
    )
    async def download_export(export_id: str) -> Response:
        principal = await _caller(analytics, "export_data")
        parse_query(WorkspaceQuery, request.args)
        return await exports.download(analytics, principal, export_id)
