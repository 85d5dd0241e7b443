"""The Quart-Trio application: blueprints and the error envelope for every failure."""

from __future__ import annotations

import logging
from typing import Any

from quart import Response
from quart_trio import QuartTrio
from quart_trio.wrappers.request import TrioRequest
from werkzeug.exceptions import HTTPException

from gateway.api.audio import TRANSCRIPTIONS_PATH, audio_blueprint
from gateway.api.embeddings import embeddings_blueprint
from gateway.api.health import health_blueprint
from gateway.api.keys import keys_blueprint
from gateway.api.models import models_blueprint
from gateway.api.providers import providers_blueprint
from gateway.api.rate_limits import rate_limits_blueprint
from gateway.api.rerank import rerank_blueprint
from gateway.api.routing_rules import routing_rules_blueprint
from gateway.platform.errors import ApiError
from gateway.platform.state import AppState
from gateway.platform.web import error_response

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    404: ("not_found", "not_found_error"),
    405: ("method_not_allowed", "invalid_request_error"),
    408: ("request_timeout", "invalid_request_error"),
    413: ("request_too_large", "invalid_request_error"),
    415: ("unsupported_media_type", "invalid_request_error"),
}


# Routes whose bodies are read as a stream with their own size limit (uploads spooled to
# disk): Quart's MAX_CONTENT_LENGTH would refuse them by their Content-Length at once.
UPLOAD_LIMITS = {TRANSCRIPTIONS_PATH: 26 * 1024 * 1024}  # 25 MB of audio + form fields


class GatewayRequest(TrioRequest):
    """Quart's request with a larger body limit on the upload routes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        path = args[2] if len(args) > 2 else kwargs.get("path")
        if path in UPLOAD_LIMITS:
            kwargs["max_content_length"] = UPLOAD_LIMITS[path]
        super().__init__(*args, **kwargs)


def create_app(state: AppState) -> QuartTrio:
    """An app serving `state`; the caller owns the state's lifetime (`gateway.platform.server`)."""
    app = QuartTrio(__name__)
    app.request_class = GatewayRequest
    app.config["RESPONSE_TIMEOUT"] = None  # streams may run for minutes; deadlines are ours
    app.config["BODY_TIMEOUT"] = state.settings.body_timeout_s
    app.config["MAX_CONTENT_LENGTH"] = state.settings.max_body_bytes
    for blueprint in (
        health_blueprint(state),
        embeddings_blueprint(state),
        audio_blueprint(state),
        rerank_blueprint(state),
        models_blueprint(state),
        keys_blueprint(state),
        providers_blueprint(state),
        rate_limits_blueprint(state, state.limits),
        routing_rules_blueprint(state, state.rules),
    ):
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
