"""GET /v1/management/request-log and /v1/management/request-log/{request_id}: the
request log (`gateway.requestlog`), read with the `view_analytics` action."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.platform.state import AppState
from gateway.platform.web import authenticate_manager, json_response
from gateway.requestlog.service import list_entries, read_request

REQUEST_LOG = "/v1/management/request-log"


def request_log_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("request_log", __name__)

    @bp.get(REQUEST_LOG)
    async def request_log() -> Response:
        principal = await authenticate_manager(state, "view_analytics")
        return json_response(await list_entries(state, principal, request.args))

    @bp.get(f"{REQUEST_LOG}/<request_id>")
    async def request_log_entry(request_id: str) -> Response:
        principal = await authenticate_manager(state, "view_analytics")
        return json_response(await read_request(state, principal, request_id))

    return bp
