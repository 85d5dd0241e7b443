"""The Quart-Trio application: blueprints and the error envelope for every failure."""

from __future__ import annotations

import logging

from quart import Response
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from gateway.api.agents import agents_blueprint
from gateway.api.alerts import alerts_blueprint
from gateway.api.analytics import analytics_blueprint
from gateway.api.audio import TRANSCRIPTIONS_PATH, audio_blueprint
from gateway.api.audit_log import audit_log_blueprint
from gateway.api.auth_tokens import auth_tokens_blueprint
from gateway.api.billing import billing_blueprint
from gateway.api.console import console_blueprint
from gateway.api.documents import documents_blueprint
from gateway.api.embeddings import embeddings_blueprint
from gateway.api.files import files_blueprint
from gateway.api.health import health_blueprint
from gateway.api.keys import keys_blueprint
from gateway.api.mcp import mcp_blueprint
from gateway.api.metrics import metrics_blueprint
from gateway.api.models import models_blueprint
from gateway.api.ocr import ocr_blueprint
from gateway.api.openapi import openapi_blueprint
from gateway.api.organization import organization_blueprint
from gateway.api.pipelines import PIPELINE_BODY_LIMIT, PIPELINES_PATH, pipelines_blueprint
from gateway.api.providers import providers_blueprint
from gateway.api.rate_limits import rate_limits_blueprint
from gateway.api.request_log import request_log_blueprint
from gateway.api.rerank import rerank_blueprint
from gateway.api.routing_rules import routing_rules_blueprint
from gateway.api.status import status_blueprint
from gateway.api.sustainability import sustainability_blueprint
from gateway.platform.errors import ApiError
from gateway.platform.state import AppState
from gateway.platform.uploads import file_upload_limits, upload_request_class
from gateway.platform.web import error_response
from gateway.uploads.formats import LARGEST_UPLOAD

logger = logging.getLogger(__name__)

_HTTP_CODES = {
    404: ("not_found", "not_found_error"),
    405: ("method_not_allowed", "invalid_request_error"),
    408: ("request_timeout", "invalid_request_error"),
    413: ("request_too_large", "invalid_request_error"),
    415: ("unsupported_media_type", "invalid_request_error"),
    507: ("storage_quota_exceeded", "storage_error"),
}


# The transcription upload: 25 MB of audio plus the form's other fields. Its body is read
# as a stream with its own limit; Quart's MAX_CONTENT_LENGTH would refuse it at once.
TRANSCRIPTION_UPLOAD_LIMIT = 26 * 1024 * 1024


def create_app(state: AppState) -> QuartTrio:
    """An app serving `state`; the caller owns the state's lifetime (`gateway.platform.server`)."""
    app = QuartTrio(__name__)
    app.request_class = upload_request_class(
        file_upload_limits(LARGEST_UPLOAD)
        | {TRANSCRIPTIONS_PATH: TRANSCRIPTION_UPLOAD_LIMIT}
        | {PIPELINES_PATH: PIPELINE_BODY_LIMIT}  # pipelines: audio in a form or as base64
    )
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
        status_blueprint(state),
        alerts_blueprint(state),
        billing_blueprint(state),
        organization_blueprint(state),
        audit_log_blueprint(state),
        auth_tokens_blueprint(state),
        metrics_blueprint(state),
        openapi_blueprint(),
        console_blueprint(state),
        documents_blueprint(state),
        files_blueprint(state),
        ocr_blueprint(state),
        sustainability_blueprint(state),
        # Agents (issue 18): their management routes and their MCP server.
        agents_blueprint(state),
        mcp_blueprint(state),
        pipelines_blueprint(state),
        analytics_blueprint(state),
        request_log_blueprint(state),
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
