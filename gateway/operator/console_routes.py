"""GET /console (the web console's static files, from the package) and its one data
endpoint, GET /v1/management/console/usage (usage over time for the charts)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from quart import Blueprint, Response, request, send_from_directory

from gateway.operator.services import OperatorServices
from gateway.operator.usage_view import UsageParameters, UsageSeries, parse_query, render_series
from gateway.platform.apidoc import Content, operation
from gateway.platform.web import json_response
from store.usage_series import usage_series

FILES = Path(__file__).resolve().parent / "console"
TAG = "operator"
HTML = Content("text/html")


def console_blueprint(operator: OperatorServices) -> Blueprint:
    bp = Blueprint("console", __name__)

    @bp.get("/console")
    @operation("The web console (sign in with an API key)", TAG, answer=HTML, public=True)
    async def page() -> Response:
        response = await send_from_directory(FILES, "index.html")
        response.headers["Cache-Control"] = "no-cache"
        return response

    @bp.get("/console/<path:asset>")
    @operation(
        "The web console's files",
        TAG,
        answer=Content("*/*"),
        public=True,
        errors={404: "not_found"},
    )
    async def asset(asset: str) -> Response:
        return await send_from_directory(FILES, asset)

    @bp.get("/v1/management/console/usage")
    @operation(
        "Usage over time for the console's charts (sums per bucket, provider and model)",
        TAG,
        query=UsageParameters,
        answer=UsageSeries,
        permission="view_analytics",
        description="`buckets` lists the start of every bucket of the range, empty ones "
        "included (at most 2,000).",
        errors={400: "invalid_period"},
    )
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
