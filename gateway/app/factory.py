"""The Quart-Trio application: the families' blueprints and the error envelope for every
failure."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

from quart import Blueprint, Response, has_request_context, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException
from werkzeug.routing.exceptions import WebsocketMismatch

from gateway.app.families import Mounted
from gateway.platform.apidoc import MARK
from gateway.platform.asgi import ErrorBody, Route, spec_error_body
from gateway.platform.config import Settings
from gateway.platform.errors import ApiError
from gateway.platform.routing import OwnPathMap
from gateway.platform.uploads import upload_request_class
from gateway.platform.web import error_response, json_response

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    404: ("not_found", "not_found_error"),
    405: ("method_not_allowed", "invalid_request_error"),
    408: ("request_timeout", "invalid_request_error"),
    413: ("request_too_large", "invalid_request_error"),
    415: ("unsupported_media_type", "invalid_request_error"),
    507: ("storage_quota_exceeded", "storage_error"),
}


class GatewayApp(QuartTrio):
    """Quart-Trio whose route table keeps a literal path to its own rule (a 405 for
    `GET /v1/files/search`, not a lookup of a file named "search"; `Allow` lists only
    that path's methods): `gateway.platform.routing`."""

    url_map_class = OwnPathMap


def create_app(settings: Settings, mounted: Sequence[Mounted]) -> QuartTrio:
    """The Quart app of the mounted families (`gateway.app.families`); the caller owns
    their services' lifetime (`gateway.app.server`)."""
    app = GatewayApp(__name__)
    limits: dict[str, int] = {}
    for family in mounted:
        limits |= family.upload_limits
    app.request_class = upload_request_class(limits)
    app.config["RESPONSE_TIMEOUT"] = None  # streams may run for minutes; deadlines are ours
    app.config["BODY_TIMEOUT"] = settings.body_timeout_s
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    fast = [r for f in mounted for r in f.routes]
    app.register_blueprint(fast_path_rules(fast))
    for family in mounted:
        for blueprint in family.blueprints:
            app.register_blueprint(blueprint)
    app.register_error_handler(ApiError, _api_error)
    sockets = {rule.rule for rule in app.url_map.iter_rules() if rule.websocket}
    shapes = {r.path: r.error_body for r in fast}
    app.register_error_handler(HTTPException, _http_error_in(shapes, sockets))
    app.register_error_handler(Exception, _unexpected)
    return app


def fast_path_rules(routes: Sequence[Route]) -> Blueprint:
    """The fast path's routes as rules of Quart's table, so that one table knows every
    route: Quart answers what the fast path passes on for a path it serves (another
    method: a 405 whose `Allow` lists every method of the path; a WebSocket upgrade of
    the same path), and the OpenAPI document reads every route, with its operation,
    from it. The fast path answers these requests itself; the rules' views are never
    called (`FastPath`)."""
    bp = Blueprint("fast", __name__)
    for route in routes:
        view = _served_by_the_fast_path(route)
        name = re.sub(r"[^A-Za-z0-9]+", "_", route.path.removeprefix("/v1/").strip("/"))
        bp.add_url_rule(route.path, name, view, methods=[route.method])
    return bp


def _served_by_the_fast_path(route: Route) -> Callable[..., Awaitable[Response]]:
    async def view(**_: str) -> Response:
        raise RuntimeError(f"{route.method} {route.path} is served by the fast path")

    if route.operation is not None:
        setattr(view, MARK, route.operation)
    return view


async def _api_error(error: ApiError) -> Response:
    return error_response(error)


def _http_error_in(
    shapes: Mapping[str, ErrorBody], sockets: Collection[str]
) -> Callable[[HTTPException], Awaitable[Response]]:
    """Quart's own refusals (404, 405, 413...) in the envelope; on a fast-path route's
    path, in that route's shape (`/v1/messages` answers as Anthropic's API does). A plain
    GET of a WebSocket route is a 426, also where the path has an HTTP route too
    (`/v1/responses`: Werkzeug says 405 there, as the other rule's method differs)."""

    async def answer(error: HTTPException) -> Response:
        if has_request_context() and (
            isinstance(error, WebsocketMismatch)
            or (error.code == 405 and request.method == "GET" and request.path in sockets)
        ):
            return _upgrade_required(request.path)
        status = error.code or 500
        code, kind = _HTTP_CODES.get(status, ("http_error", "invalid_request_error"))
        message = error.description or error.name
        headers = dict(error.get_headers())
        headers.pop("Content-Type", None)
        refusal = ApiError(status, code, message, type=kind, headers=headers)
        shape = shapes.get(request.path, spec_error_body)
        return json_response(shape(refusal), status, refusal.headers)

    return answer


def _upgrade_required(path: str) -> Response:
    """A plain HTTP request to a WebSocket route: 426 with the upgrade to ask for (RFC
    9110 15.5.22), rather than Werkzeug's bare 400."""
    return error_response(
        ApiError(
            426,
            "upgrade_required",
            f"{path} is a WebSocket endpoint: open it with 'Upgrade: websocket'.",
            headers={"Upgrade": "websocket", "Connection": "Upgrade"},
        )
    )


async def _unexpected(error: Exception) -> Response:
    logger.exception("unhandled error", exc_info=error)
    return error_response(
        ApiError(500, "internal_error", "The gateway failed unexpectedly.", type="server_error")
    )
