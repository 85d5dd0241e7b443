"""The Quart-Trio application: the families' blueprints and the error envelope for every
failure."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from quart import Response
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from gateway.app.families import Mounted
from gateway.platform.config import Settings
from gateway.platform.errors import ApiError
from gateway.platform.uploads import upload_request_class
from gateway.platform.web import error_response

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    404: ("not_found", "not_found_error"),
    405: ("method_not_allowed", "invalid_request_error"),
    408: ("request_timeout", "invalid_request_error"),
    413: ("request_too_large", "invalid_request_error"),
    415: ("unsupported_media_type", "invalid_request_error"),
    507: ("storage_quota_exceeded", "storage_error"),
}


def create_app(settings: Settings, mounted: Sequence[Mounted]) -> QuartTrio:
    """The Quart app of the mounted families (`gateway.app.families`); the caller owns
    their services' lifetime (`gateway.app.server`)."""
    app = QuartTrio(__name__)
    limits: dict[str, int] = {}
    for family in mounted:
        limits |= family.upload_limits
    app.request_class = upload_request_class(limits)
    app.config["RESPONSE_TIMEOUT"] = None  # streams may run for minutes; deadlines are ours
    app.config["BODY_TIMEOUT"] = settings.body_timeout_s
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    # The fast path's table, for the OpenAPI document (`gateway.operator.openapi`).
    app.config["FAST_ROUTES"] = [(r.method, r.path) for f in mounted for r in f.routes]
    for family in mounted:
        for blueprint in family.blueprints:
            app.register_blueprint(blueprint)
    app.register_error_handler(ApiError, _api_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
    return app


async def _api_error(error: ApiError) -> Response:
    return error_response(error)


async def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    code, kind = _HTTP_CODES.get(status, ("http_error", "invalid_request_error"))
    message = error.description or error.name
    headers = dict(error.get_headers())
    headers.pop("Content-Type", None)
    return error_response(ApiError(status, code, message, type=kind, headers=headers))


async def _unexpected(error: Exception) -> Response:
    logger.exception("unhandled error", exc_info=error)
    return error_response(
        ApiError(500, "internal_error", "The gateway failed unexpectedly.", type="server_error")
    )
