"""The fast path's route table: every route served by the plain-ASGI front
(`gateway.platform.asgi`) rather than by Quart, one list for the server and the OpenAPI
document."""

from __future__ import annotations

from gateway.api.audio import audio_routes
from gateway.api.chat import chat_routes
from gateway.api.messages import messages_routes
from gateway.api.responses import responses_routes
from gateway.platform.asgi import Route


def fast_routes() -> list[Route]:
    return [*chat_routes(), *responses_routes(), *messages_routes(), *audio_routes()]
