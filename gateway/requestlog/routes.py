"""GET /v1/management/request-log and /v1/management/request-log/{request_id}: the
request log (`gateway.requestlog`), read with the `view_analytics` action."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.platform.web import json_response
from gateway.requestlog.service import list_entries, read_request
from gateway.requestlog.services import RequestLogServices

REQUEST_LOG = "/v1/management/request-log"


def request_log_blueprint(services: RequestLogServices) -> Blueprint:
    bp = Blueprint("request_log", __name__)

    @bp.get(REQUEST_LOG)
    async def request_log() -> Response:
        principal = await services.auth.manager("view_analytics")
        return json_response(await list_entries(services, principal, request.args))

    @bp.get(f"{REQUEST_LOG}/<request_id>")
    async def request_log_entry(request_id: str) -> Response:
        principal = await services.auth.manager("view_analytics")
        return json_response(await read_request(services, principal, request_id))

    return bp
