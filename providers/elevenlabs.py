"""Adapter for ElevenLabs: configuration, catalogue, health and speech synthesis.

ElevenLabs authenticates with an `xi-api-key` header, not a bearer token. `GET /v1/models`
answers a bare JSON array of model objects (`model_id`, `name`, `can_do_text_to_speech`,
`languages`, ...); `GET /v1/voices` answers `{"voices": [...]}`. Errors carry
`{"detail": {"status": "invalid_api_key", "message": "..."}}`, except request validation
(422), where `detail` is FastAPI's list of `{loc, msg, type}`. `endpoint.base_url` is the
vendor root (`https://api.elevenlabs.io`, or the simulator's `/elevenlabs` prefix); every
path starts with `/v1`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from providers.audio_types import SpeechRequest
from providers.base import AudioStream
from providers.elevenlabs_speech import ElevenLabsSpeech
from providers.elevenlabs_ws import TRANSPORT_SETTING, ElevenLabsWebSocket
from providers.errors import (
    AuthenticationFailed,
    InvalidUpstreamRequest,
    ModelOverloaded,
    ProviderError,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.http import read_json, retry_after_seconds


@attrs.frozen
class Voice:
    """A voice as the gateway shows it: the vendor's id, its name and its descriptive
    labels (accent, age, gender, use case, ...)."""

    voice_id: str
    name: str
    labels: Mapping[str, str] = attrs.field(factory=dict)


# -- answers in ----------------------------------------------------------------------------


def parse_model_ids(data: Any) -> list[str]:
    """The ids of a `GET /v1/models` answer (a JSON array), in the vendor's order."""
    if not isinstance(data, list):
        return []
    return [
        str(item["model_id"]) for item in data if isinstance(item, dict) and item.get("model_id")
    ]


def parse_voice(item: Mapping[str, Any]) -> Voice | None:
    """One voice object, or None when it has no id; label values are kept as text."""
    voice_id = item.get("voice_id")
    if not voice_id:
        return None
    labels = item.get("labels")
    return Voice(
        voice_id=str(voice_id),
        name=str(item.get("name") or voice_id),
        labels=(
            {str(k): str(v) for k, v in labels.items() if v is not None}
            if isinstance(labels, dict)
            else {}
        ),
    )


def parse_voices(data: Any) -> list[Voice]:
    """The voices of a `GET /v1/voices` (or `/v2/voices`) answer, in the vendor's order."""
    items = data.get("voices") if isinstance(data, dict) else None
    voices = (parse_voice(item) for item in items or () if isinstance(item, dict))
    return [voice for voice in voices if voice is not None]


# -- errors --------------------------------------------------------------------------------


@attrs.frozen
class ErrorDetail:
    """What an error body says: ElevenLabs' `detail.status` code, a message, and for a
    validation error the name of the offending field."""

    message: str
    code: str | None = None
    param: str | None = None


def parse_error(status: int, body: bytes) -> ErrorDetail:
    """The `detail` of an error body, in whichever of its three forms it came."""
    parsed = read_json(body)
    detail = parsed.get("detail") if isinstance(parsed, dict) else None
    fallback = f"upstream answered HTTP {status}"
    if isinstance(detail, dict):
        code = detail.get("status")
        return ErrorDetail(
            str(detail.get("message") or code or fallback), str(code) if code else None
        )
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        loc = first.get("loc")
        param = str(loc[-1]) if isinstance(loc, list) and loc else None
        kind = first.get("type")
        return ErrorDetail(str(first.get("msg") or fallback), str(kind) if kind else None, param)
    if isinstance(detail, str) and detail:
        return ErrorDetail(detail)
    return ErrorDetail(fallback)


def map_elevenlabs_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """An ElevenLabs error answer mapped by its status; `detail.status` is kept as the
    vendor code where our hierarchy has room for it."""
    detail = parse_error(status, body)
    if status in (401, 403):
        return AuthenticationFailed(provider, detail.message)
    if status == 429:
        return ModelOverloaded(
            provider, detail.message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status == 503:
        return UpstreamUnavailable(
            provider, detail.message, retry_after=retry_after_seconds(headers)
        )
    if status == 504:
        return UpstreamTimeout(provider, detail.message, timeout_ms=0)
    if status >= 500 or status < 400:
        return UpstreamHTTPError(provider, detail.message, status=status, vendor_code=detail.code)
    return InvalidUpstreamRequest(provider, detail.message, param=detail.param)


# -- the adapter ---------------------------------------------------------------------------


class ElevenLabsProvider(ElevenLabsSpeech, ElevenLabsWebSocket):
    """Speech synthesis (`providers.elevenlabs_speech` over HTTP, or
    `providers.elevenlabs_ws` over the stream-input WebSocket when the provider's
    `speech_transport` setting is "websocket"), model and voice listing on ElevenLabs;
    every other operation is `Unsupported`."""

    def speech_stream(self, request: SpeechRequest) -> AudioStream:  # type: ignore[override]
        # (the HTTP mixin's is an `asynccontextmanager`; both are `AudioStream`s)
        if self.endpoint.settings.get(TRANSPORT_SETTING) == "websocket":
            return self.speech_stream_ws(request)
        return super().speech_stream(request)

    def auth_headers(self) -> dict[str, str]:
        return {"xi-api-key": self.endpoint.api_key}

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_elevenlabs_error(self.provider_id, status, body, headers, model)

    async def list_models(self) -> list[str]:
        """Ids of the models the key may use; cancelling closes the upstream request."""
        return parse_model_ids(await self.get_json("/v1/models"))

    async def list_voices(self) -> list[Voice]:
        """The voices of the account (premade and its own); cancelling closes the
        upstream request."""
        return parse_voices(await self.get_json("/v1/voices"))
