"""GET /console (the web console's static files, from the package) and its one data
endpoint, GET /v1/management/console/usage (usage over time for the charts)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from quart import Blueprint, Response, request, send_from_directory

from gateway.operator.services import OperatorServices
from gateway.operator.usage_view import parse_query, render_series
from gateway.platform.web import json_response
from store.usage_series import usage_series

FILES = Path(__file__).resolve().parent / "console"


def console_blueprint(operator: OperatorServices) -> Blueprint:
    bp = Blueprint("console", __name__)

    @bp.get("/console")
    async def page() -> Response:
        response = await send_from_directory(FILES, "index.html")
        response.headers["Cache-Control"] = "no-cache"
        return response

    @bp.get("/console/<path:asset>")
    async def asset(asset: str) -> Response:
        return await send_from_directory(FILES, asset)

    @bp.get("/v1/management/console/usage")
    async def usage() -> Response:
        principal = await operator.auth.manager("view_analytics")
        query = parse_query(request.args, datetime.now(UTC))
        await operator.flush_usage()
        points = await operator.db.run(
            lambda d: usage_series(
                d,
                workspace_id=principal.workspace_id,
                since=query.since,
                until=query.until,
                bucket_s=query.bucket_s,
            )
        )
        return json_response(render_series(query, points))

    return bp
