"""GET /v1/management/request-log and /v1/management/request-log/{request_id}: the
request log (`gateway.requestlog`), read with the `view_analytics` action."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.platform.apidoc import operation
from gateway.platform.web import json_response
from gateway.requestlog import render
from gateway.requestlog.input import LogParameters
from gateway.requestlog.service import list_entries, read_request
from gateway.requestlog.services import RequestLogServices

REQUEST_LOG = "/v1/management/request-log"
TAG = "request-log"


def request_log_blueprint(services: RequestLogServices) -> Blueprint:
    bp = Blueprint("request_log", __name__)

    @bp.get(REQUEST_LOG)
    @operation(
        "The workspace's model calls, newest first, filtered, paged by cursor",
        TAG,
        query=LogParameters,
        answer=render.LogPage,
        permission="view_analytics",
        description="A parameter the log does not take is refused (a misspelt filter "
        "would list everything).",
        errors={400: ("invalid_cursor", "invalid_period")},
    )
    async def request_log() -> Response:
        principal = await services.auth.manager("view_analytics")
        return json_response(await list_entries(services, principal, request.args))

    @bp.get(f"{REQUEST_LOG}/<request_id>")
    @operation(
        "One request's entries (a pipeline's stages are several), with their attempts",
        TAG,
        answer=render.LoggedRequest,
        permission="view_analytics",
        description="`body` (the request and the answer, PII redacted) is shown to owners "
        "and admins when the workspace keeps bodies.",
        errors={404: "request_not_found"},
    )
    async def request_log_entry(request_id: str) -> Response:
        principal = await services.auth.manager("view_analytics")
        return json_response(await read_request(services, principal, request_id))

    return bp
