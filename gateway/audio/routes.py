"""Audio endpoints: transcriptions and translations (multipart, Quart), speech (fast
path), the voice catalog and its previews, and the management API of workspace voice
mappings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.audio import mappings
from gateway.audio import voices as voice_views
from gateway.audio.mapping_input import MappingChange, MappingSpec
from gateway.audio.preview import speak_preview
from gateway.audio.services import AudioServices
from gateway.audio.shapes import (
    SpeechBody,
    SpeechEvent,
    TranscriptEvent,
    TranscriptionDiarized,
    TranscriptionParts,
    TranscriptionText,
    TranscriptionVerbose,
    TranslationParts,
)
from gateway.audio.speech import SPEECH_PATH, serve_speech
from gateway.audio.transcription import prepare_stream, serve_transcription
from gateway.kernels.uploads.spooled import Upload, read_upload
from gateway.platform.answers import Deleted
from gateway.platform.apidoc import Content, Header, Operation, operation
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering, StreamAnswer
from gateway.platform.web import json_response, read_object, stream_response
from gateway.upstream.refusals import ENGINE, merged
from providers.audio_types import CONTENT_TYPES
from providers.voices import load_voices

TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
TRANSLATIONS_PATH = "/v1/audio/translations"
MAPPINGS = "/v1/management/voice-mappings"
TAG = "audio"
MAPPINGS_TAG = "voice-mappings"
NO_VOICE = {404: "voice_not_found"}
NO_MAPPING = {404: "voice_mapping_not_found"}
PREVIEW_ERRORS = merged(ENGINE, NO_VOICE, {500: "provider_error"})
# A call through the engine: a vendor's failure is 500 `provider_error` on audio routes
# (`gateway.kernels.voice.errors`), a fallback no provider could serve is refused, and
# an option the named model cannot honour (`gateway.audio.fit`).
AUDIO_CALL = merged(
    ENGINE, {400: ("invalid_fallback", "unsupported_parameter"), 500: "provider_error"}
)
UPLOAD_ERRORS = merged(AUDIO_CALL, {400: "invalid_audio", 413: "file_too_large"})
# What a transcription's fields mean together (each valid alone; docs/errors.md).
TRANSCRIPTION_ERRORS = merged(UPLOAD_ERRORS, {400: ("invalid_known_speakers", "chunking_required")})
SERVICE_HEADERS = (
    Header("X-Service-Project", "A project id for the usage records"),
    Header("X-Service-Team", "A team id for the usage records"),
    Header("X-Service-Tags", "Comma-separated tags for the usage records"),
    Header("X-Service-Trace-Id", "A trace id of the caller's"),
)
# The `text`, `srt` and `vtt` answers of transcriptions and translations.
TEXT_ANSWERS = (
    Content("text/plain", description="`response_format: text`"),
    Content("application/x-subrip", description="`response_format: srt`"),
    Content("text/vtt", description="`response_format: vtt`"),
)
SPEECH_OPERATION = Operation(
    summary="Speak a text; the body is audio in `response_format`, streamed unless `stream: false`",
    tag=TAG,
    body=SpeechBody,
    answer=(
        *(
            Content(media, description=f"`response_format: {name}`")
            for name, media in CONTENT_TYPES.items()
        ),
        Content("text/event-stream", SpeechEvent),
    ),
    headers=SERVICE_HEADERS,
    errors=AUDIO_CALL,
    description="Streamed by default, as OpenAI's speech is (chunked, the first bytes as "
    "soon as the vendor's); `stream: false` answers whole. `stream_format: sse` gives "
    "OpenAI's `speech.audio.delta`/`speech.audio.done` events. Headers of the answer: "
    "`Content-Length` (not when streamed), `X-Service-Provider`, `X-Service-Model`, "
    "`X-Service-Latency-Ms`. Raw `pcm` is 24 kHz 16-bit signed little-endian mono.",
)


def audio_routes(services: AudioServices) -> list[Route]:
    """The fast-path routes of the family (speech streams audio as the upstream makes it)."""

    def answer_speech(principal: Principal, body: bytes, headers: Mapping[str, str]) -> Answering:
        return serve_speech(services, principal, body, headers)

    return [Route("POST", SPEECH_PATH, answer_speech, operation=SPEECH_OPERATION)]


async def _whole(
    services: AudioServices,
    principal: Principal,
    upload: Upload,
    headers: Mapping[str, str],
    *,
    translate: bool,
) -> Response:
    """A whole transcription or translation; the upload is closed on every path."""
    try:
        answer = await serve_transcription(
            services, principal, upload, headers, translate=translate
        )
    finally:
        upload.close()
    return Response(answer.body, headers=dict(answer.headers), content_type=answer.media_type)


def audio_blueprint(services: AudioServices) -> Blueprint:
    bp = Blueprint("audio", __name__)
    _transcription_routes(bp, services)
    _voice_routes(bp, services)
    _mapping_routes(bp, services)
    return bp


def _transcription_routes(bp: Blueprint, services: AudioServices) -> None:
    """Speech to text from an uploaded file: transcribed (whole or streamed) or translated."""

    @bp.post(TRANSCRIPTIONS_PATH)
    @operation(
        "Transcribe an audio file (multipart), whole or streamed",
        TAG,
        body=Content("multipart/form-data", TranscriptionParts),
        answer=(
            TranscriptionText | TranscriptionVerbose | TranscriptionDiarized,
            *TEXT_ANSWERS,
            Content("text/event-stream", TranscriptEvent),
        ),
        headers=SERVICE_HEADERS,
        errors=TRANSCRIPTION_ERRORS,
        description="`response_format` chooses the body: `json` `{text}`, `verbose_json` "
        "(segments, words), `diarized_json` (segments by speaker), `text`, `srt` or `vtt`; "
        "`stream=true` answers server-sent events. Options only some models honour "
        "(`diarize`, `context_bias` and `keywords`, `languages`, `include`, "
        "`chunking_strategy`, known speakers, word timestamps, `prompt`, `temperature`) are "
        "a 400 `unsupported_parameter` on a model that cannot; a field no transcription has "
        "is a 400 naming it.",
    )
    async def transcriptions() -> Response:
        principal = await services.auth.caller()
        headers = cast(Mapping[str, str], request.headers)
        upload = await read_upload(request.body, request.headers.get("content-type"))
        if upload.fields.get("stream", [""])[-1].lower() == "true":
            # The body reads the spooled clip while it streams, and closes the upload.
            body = await prepare_stream(services, principal, upload, headers)
            return stream_response(StreamAnswer(body, body.head_headers()))
        return await _whole(services, principal, upload, headers, translate=False)

    @bp.post(TRANSLATIONS_PATH)
    @operation(
        "Translate speech in an audio file into English text (multipart)",
        TAG,
        body=Content("multipart/form-data", TranslationParts),
        answer=(TranscriptionText | TranscriptionVerbose, *TEXT_ANSWERS),
        headers=SERVICE_HEADERS,
        errors=UPLOAD_ERRORS,
        description="OpenAI's whisper-1 and Gemini translate; Mistral's Voxtral and the "
        "offline `local` model do not (a 400 when named, left out of fallbacks).",
    )
    async def translations() -> Response:
        principal = await services.auth.caller()
        headers = cast(Mapping[str, str], request.headers)
        upload = await read_upload(request.body, request.headers.get("content-type"))
        return await _whole(services, principal, upload, headers, translate=True)


def _voice_routes(bp: Blueprint, services: AudioServices) -> None:
    """The voice catalog: listed, one voice, a spoken sample."""

    @bp.get("/v1/audio/voices")
    @operation(
        "The voice catalog and the standard voices",
        TAG,
        query=voice_views.VoicesQuery,
        answer=voice_views.VoiceCatalogBody,
        errors={400: "unknown_provider"},
    )
    async def voices() -> Response:
        await services.auth.caller()
        query = {k: v for k, v in request.args.items()}
        return json_response(voice_views.voices_listing(load_voices(), query, services.catalog))

    @bp.get("/v1/audio/voices/<voice_id>")
    @operation("One voice, in detail", TAG, answer=voice_views.Voice, errors=NO_VOICE)
    async def voice(voice_id: str) -> Response:
        await services.auth.caller()
        found = voice_views.voice_or_404(load_voices(), voice_id)
        return json_response(voice_views.voice_body(found, detail=True))

    @bp.get("/v1/audio/voices/<voice_id>/preview")
    @operation(
        "A short sample of the voice (MP3)",
        TAG,
        answer=Content("audio/mpeg", description="The sample, spoken by the voice's provider"),
        errors=PREVIEW_ERRORS,
        description="Spoken through the engine like speech: the key's limits apply, and a "
        "provider's failure is 500 `provider_error` (the spec's status for audio).",
    )
    async def preview(voice_id: str) -> Response:
        principal = await services.auth.caller()
        found = voice_views.voice_or_404(load_voices(), voice_id)
        headers = cast(Mapping[str, str], request.headers)
        audio, answer_headers = await speak_preview(services, principal, found, headers)
        return Response(audio, headers=answer_headers, content_type="audio/mpeg")


def _mapping_routes(bp: Blueprint, services: AudioServices) -> None:
    """Voice mappings are workspace configuration: reading them needs the role's
    `view_configuration`, changing them `configure_providers` (`gateway.audio.mappings`)."""
    _mapping_list_routes(bp, services)
    _one_mapping_routes(bp, services)


def _mapping_list_routes(bp: Blueprint, services: AudioServices) -> None:
    """The workspace's mappings: one created, all listed."""

    @bp.post(MAPPINGS)
    @operation(
        "Create a voice mapping: one name for a voice per provider",
        MAPPINGS_TAG,
        body=MappingSpec,
        answer=voice_views.VoiceMapping,
        status=201,
        permission="configure_providers",
        errors={409: "voice_mapping_exists"},
    )
    async def create_mapping() -> Response:
        principal = await services.auth.manager("configure_providers")
        return json_response(await mappings.create(services, principal, await read_object()), 201)

    @bp.get(MAPPINGS)
    @operation(
        "The workspace's voice mappings",
        MAPPINGS_TAG,
        answer=voice_views.MappingList,
        permission="view_configuration",
    )
    async def list_mappings() -> Response:
        principal = await services.auth.manager("view_configuration")
        return json_response(await mappings.list_mappings(services, principal))


def _one_mapping_routes(bp: Blueprint, services: AudioServices) -> None:
    """One mapping: read, changed (PATCH) or replaced (PUT), deleted."""

    @bp.get(f"{MAPPINGS}/<mapping_id>")
    @operation(
        "One voice mapping",
        MAPPINGS_TAG,
        answer=voice_views.VoiceMapping,
        permission="view_configuration",
        errors=NO_MAPPING,
    )
    async def get_mapping(mapping_id: str) -> Response:
        principal = await services.auth.manager("view_configuration")
        return json_response(await mappings.read(services, principal, mapping_id))

    @bp.patch(f"{MAPPINGS}/<mapping_id>")
    @operation(
        "Change a voice mapping: the fields given",
        MAPPINGS_TAG,
        body=MappingChange,
        answer=voice_views.VoiceMapping,
        permission="configure_providers",
        errors=NO_MAPPING | {409: "voice_mapping_exists"},
    )
    async def update_mapping(mapping_id: str) -> Response:
        return await _change(services, mapping_id, partial=True)

    @bp.put(f"{MAPPINGS}/<mapping_id>")
    @operation(
        "Replace a voice mapping: `name` and `mappings` are needed",
        MAPPINGS_TAG,
        body=MappingSpec,
        answer=voice_views.VoiceMapping,
        permission="configure_providers",
        errors=NO_MAPPING | {409: "voice_mapping_exists"},
    )
    async def replace_mapping(mapping_id: str) -> Response:
        return await _change(services, mapping_id, partial=False)

    @bp.delete(f"{MAPPINGS}/<mapping_id>")
    @operation(
        "Delete a voice mapping",
        MAPPINGS_TAG,
        answer=Deleted,
        permission="configure_providers",
        errors=NO_MAPPING,
    )
    async def delete_mapping(mapping_id: str) -> Response:
        principal = await services.auth.manager("configure_providers")
        return json_response(await mappings.delete(services, principal, mapping_id))


async def _change(services: AudioServices, mapping_id: str, *, partial: bool) -> Response:
    """A PATCH (`partial`: the fields given) or a PUT (the whole mapping)."""
    principal = await services.auth.manager("configure_providers")
    body = await read_object()
    return json_response(
        await mappings.update(services, principal, mapping_id, body, partial=partial)
    )
