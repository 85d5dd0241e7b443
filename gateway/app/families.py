"""The registry of families: what each one adds to the gateway, in one table.

The composition root is the only place that knows every family. Each entry's `mount`
builds the family's few services from what the root built and returns what the family
adds: Quart blueprints, routes of the plain-ASGI fast path (streamed answers whose start
can fail), and the upload limits of its routes whose bodies are larger than a JSON body.
A new family is one entry here (docs/architecture.md, "Adding a family"). One whose
packages are heavy says what it `requires` (`gateway.platform.extras.Requires`): where
an extra is missing it is not mounted (`gateway.app.extras`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs
from quart import Blueprint

from gateway.api.agents import agents_blueprint
from gateway.api.alerts import alerts_blueprint
from gateway.api.analytics import analytics_blueprint
from gateway.api.audio import TRANSCRIPTIONS_PATH, audio_blueprint, audio_routes
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
from gateway.api.rerank import rerank_blueprint
from gateway.api.routing_rules import routing_rules_blueprint
from gateway.api.status import status_blueprint
from gateway.api.sustainability import sustainability_blueprint
from gateway.chat.routes import chat_routes
from gateway.chat.service import serve_chat
from gateway.chat.services import ChatServices
from gateway.kernels.dialects import Dialect, ServeChat
from gateway.messages.routes import messages_routes
from gateway.messages.services import MessagesServices
from gateway.pipelines.sessions import PipelineSessions
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.extras import AUDIO, FILES, Requires
from gateway.platform.state import AppState
from gateway.platform.uploads import file_upload_limits
from gateway.realtime.routes import realtime_blueprint
from gateway.responses.routes import responses_blueprint, responses_routes
from gateway.responses.services import ResponsesServices
from gateway.uploads.formats import LARGEST_UPLOAD

SPEECH_MODELS = ("speech", "transcription")  # the catalog's model types the audio family serves

# The transcription upload: 25 MB of audio plus the form's other fields. Its body is read
# as a stream with its own limit; Quart's MAX_CONTENT_LENGTH would refuse it at once.
TRANSCRIPTION_UPLOAD_LIMIT = 26 * 1024 * 1024


@attrs.frozen
class Mounted:
    """What one family adds to the gateway."""

    blueprints: tuple[Blueprint, ...] = ()
    routes: tuple[Route, ...] = ()  # served by the fast path, before Quart
    upload_limits: Mapping[str, int] = attrs.field(factory=dict)  # POST path -> bytes


@attrs.frozen
class Family:
    name: str
    mount: Callable[[AppState], Mounted]
    requires: Requires | None = None  # extras it needs (None: the core's)


def _chat(state: AppState) -> Mounted:
    return Mounted(routes=tuple(chat_routes(state.chat)))


def chat_behind(chat: ChatServices) -> ServeChat:
    """Chat's path for the front doors that put another dialect in front of it."""

    def serve(
        principal: Principal, body: object, headers: Mapping[str, str], dialect: Dialect
    ) -> Answering:
        return serve_chat(chat, principal, body, headers, dialect)

    return serve


def _responses(state: AppState) -> Mounted:
    responses = ResponsesServices(
        chat_behind(state.chat),
        state.responses,
        state.db,
        state.engine.usage,
        state.auth,
        state.settings.responses_retention_days,
    )
    return Mounted((responses_blueprint(responses),), tuple(responses_routes(responses)))


def _messages(state: AppState) -> Mounted:
    messages = MessagesServices(chat_behind(state.chat), state.catalog)
    return Mounted(routes=tuple(messages_routes(messages)))


def _retrieval(state: AppState) -> Mounted:
    return Mounted((embeddings_blueprint(state), rerank_blueprint(state)))


def _audio(state: AppState) -> Mounted:
    return Mounted(
        (audio_blueprint(state),),
        tuple(audio_routes(state)),
        {TRANSCRIPTIONS_PATH: TRANSCRIPTION_UPLOAD_LIMIT},
    )


def _pipelines(state: AppState) -> Mounted:
    # Audio in a form or as base64.
    return Mounted(
        (pipelines_blueprint(state),), upload_limits={PIPELINES_PATH: PIPELINE_BODY_LIMIT}
    )


def _realtime(state: AppState) -> Mounted:
    # The realtime family's sessions run on the pipelines family's cascades.
    return Mounted((realtime_blueprint(state, PipelineSessions(state)),))


def _files(state: AppState) -> Mounted:
    return Mounted((files_blueprint(state),), upload_limits=file_upload_limits(LARGEST_UPLOAD))


def _admin(state: AppState) -> Mounted:
    return Mounted(
        (
            health_blueprint(state),
            models_blueprint(state),
            keys_blueprint(state),
            providers_blueprint(state),
            rate_limits_blueprint(state, state.limits),
            routing_rules_blueprint(state, state.rules),
        )
    )


def _organization(state: AppState) -> Mounted:
    return Mounted(
        (
            organization_blueprint(state),
            billing_blueprint(state),
            audit_log_blueprint(state),
            auth_tokens_blueprint(state),
        )
    )


def _operator(state: AppState) -> Mounted:
    return Mounted((metrics_blueprint(state), openapi_blueprint(), console_blueprint(state)))


def _blueprint(make: Callable[[AppState], Blueprint]) -> Callable[[AppState], Mounted]:
    return lambda state: Mounted((make(state),))


_AUDIO_PATHS = (
    "/v1/audio/speech",
    "/v1/audio/transcriptions",
    "/v1/audio/translations",
    "/v1/audio/voices",
    "/v1/management/voice-mappings",
)
_PIPELINE_PATHS = ("/v1/audio/pipelines", "/v1/management/pipeline-templates")
_REALTIME_PATHS = ("/v1/realtime", "/v1/audio/sessions")

FAMILIES: tuple[Family, ...] = (
    Family("admin", _admin),
    Family("chat", _chat),
    Family("responses", _responses),  # front doors over chat (gateway.kernels.dialects)
    Family("messages", _messages),
    Family("retrieval", _retrieval),
    Family(
        "audio",
        _audio,
        Requires((AUDIO,), "Speech, transcription and voices", _AUDIO_PATHS, SPEECH_MODELS),
    ),
    Family("status", lambda state: Mounted((status_blueprint(state), alerts_blueprint(state)))),
    Family("organization", _organization),
    Family("operator", _operator),
    Family(
        "documents",
        _blueprint(documents_blueprint),
        Requires((FILES,), "Data documents", ("/v1/data",)),
    ),
    Family("files", _files, Requires((FILES,), "Files", ("/v1/files",))),
    Family("ocr", _blueprint(ocr_blueprint), Requires((FILES,), "OCR", ("/v1/ocr",), ("ocr",))),
    Family("sustainability", _blueprint(sustainability_blueprint)),
    Family("agents", lambda state: Mounted((agents_blueprint(state), mcp_blueprint(state)))),
    Family("pipelines", _pipelines, Requires((AUDIO,), "Voice pipelines", _PIPELINE_PATHS)),
    Family(
        "realtime",
        _realtime,
        Requires((AUDIO,), "Realtime and voice sessions", _REALTIME_PATHS, ("realtime",)),
    ),
    Family("analytics", _blueprint(analytics_blueprint)),
)
