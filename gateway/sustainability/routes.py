"""GET /v1/sustainability/*: carbon and energy reports over the caller's workspace usage.

Reading them is the `view_analytics` action (every role may: the spec's viewer role is
"read-only access to analytics"); the workspace is the one `X-Workspace-ID` names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from quart import Blueprint, Response, request

from gateway.platform.auth import Principal
from gateway.platform.web import json_response
from gateway.sustainability import service
from gateway.sustainability.services import SustainabilityServices

Report = Callable[[SustainabilityServices, Principal, Mapping[str, str]], Awaitable[dict[str, Any]]]
PREFIX = "/v1/sustainability"
REPORTS: tuple[tuple[str, str, Report], ...] = (
    ("dashboard", "dashboard", service.dashboard),
    ("efficiency-score", "efficiency_score", service.efficiency_score),
    ("optimization-opportunities", "optimization_opportunities", service.opportunities_report),
    ("optimization-summary", "optimization_summary", service.optimization_summary),
)


def sustainability_blueprint(sustainability: SustainabilityServices) -> Blueprint:
    bp = Blueprint("sustainability", __name__)
    for path, name, report in REPORTS:
        bp.add_url_rule(f"{PREFIX}/{path}", name, _handler(sustainability, report), methods=["GET"])
    return bp


def _handler(
    sustainability: SustainabilityServices, report: Report
) -> Callable[[], Awaitable[Response]]:
    async def handle() -> Response:
        principal = await sustainability.auth.manager("view_analytics")
        return json_response(await report(sustainability, principal, request.args.to_dict()))

    return handle
