"""GET /v1/management/analytics/* (usage, models, api-keys, costs, performance, errors,
cache, realtime) and the analytics exports (create, read, download).

Reads need `view_analytics`, exports `export_data`. The workspace is the caller's (or the
one named by `X-Workspace-ID` or the `workspace_id` query parameter, if the caller may act
in it; one it may not answers 404 like an unknown one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from quart import Blueprint, Response, request

from gateway.analytics import exports, service
from gateway.analytics.input import parse_query
from gateway.analytics.services import AnalyticsServices
from gateway.platform import jsonio
from gateway.platform.auth import Principal
from gateway.platform.roles import Action
from gateway.platform.web import json_response, read_object

A = "/v1/management/analytics"
Page = Callable[[AnalyticsServices, service.Scope], Awaitable[dict[str, Any]]]


async def _caller(analytics: AnalyticsServices, action: Action) -> Principal:
    principal = await analytics.auth.manager(action)
    return principal.in_workspace(request.args.get("workspace_id") or None)


def _base_url() -> str:
    return request.host_url.rstrip("/")


def analytics_blueprint(analytics: AnalyticsServices) -> Blueprint:
    bp = Blueprint("analytics", __name__)

    async def page(read: Page, *, series: bool = False, groups: bool = False) -> Response:
        principal = await _caller(analytics, "view_analytics")
        query = parse_query(request.args, today=service.today(), series=series, groups=groups)
        figures = await read(analytics, service.Scope(principal.workspace_id, query))
        # orjson (`jsonio.dumps`): an hourly series of 30 days is ~450 kB of numbers, which
        # the stdlib encoder takes several times longer to write.
        return Response(jsonio.dumps(figures), content_type="application/json")

    @bp.get(f"{A}/usage")
    async def usage() -> Response:
        return await page(service.usage, series=True, groups=True)

    @bp.get(f"{A}/usage/models")
    async def usage_models() -> Response:
        return await page(service.models)

    @bp.get(f"{A}/usage/api-keys")
    async def usage_api_keys() -> Response:
        return await page(service.api_keys)

    @bp.get(f"{A}/costs")
    async def costs() -> Response:
        return await page(service.costs, series=True)

    @bp.get(f"{A}/performance")
    async def performance() -> Response:
        return await page(service.performance)

    @bp.get(f"{A}/errors")
    async def errors() -> Response:
        return await page(service.errors)

    @bp.get(f"{A}/cache")
    async def cache() -> Response:
        return await page(service.cache)

    @bp.get(f"{A}/realtime")
    async def realtime() -> Response:
        principal = await _caller(analytics, "view_analytics")
        active = analytics.drain.in_flight
        figures = await service.realtime(analytics, principal.workspace_id, active_requests=active)
        return json_response(figures)

    @bp.post(f"{A}/export")
    async def create_export() -> Response:
        principal = await _caller(analytics, "export_data")
        body = await read_object()
        record = await exports.create(
            analytics, principal.workspace_id, body, today=service.today()
        )
        return json_response(exports.render(record, _base_url()), status=202)

    @bp.get(f"{A}/export")
    async def list_exports() -> Response:
        principal = await _caller(analytics, "export_data")
        found = await exports.recent(analytics, principal, request.args)
        base = _base_url()
        return json_response({"object": "list", "data": [exports.render(r, base) for r in found]})

    @bp.get(f"{A}/export/<export_id>")
    async def get_export(export_id: str) -> Response:
        principal = await _caller(analytics, "export_data")
        record = await exports.find(analytics, principal, export_id)
        return json_response(exports.render(record, _base_url()))

    @bp.get(f"{A}/export/<export_id>/download")
    async def download_export(export_id: str) -> Response:
        principal = await _caller(analytics, "export_data")
        return await exports.download(analytics, principal, export_id)

    return bp
