"""Audio endpoints: transcriptions and translations (multipart, Quart), speech (fast
path), the voice catalog and its previews, and the management API of workspace voice
mappings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.audio import mappings
from gateway.audio import voices as voice_views
from gateway.audio.preview import speak_preview
from gateway.audio.speech import SPEECH_PATH, serve_speech
from gateway.audio.transcription import prepare_stream, serve_transcription
from gateway.audio.upload import Upload, read_upload
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering, StreamAnswer
from gateway.platform.state import AppState
from gateway.platform.web import json_response, read_object, stream_response
from providers.voices import load_voices

TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
TRANSLATIONS_PATH = "/v1/audio/translations"
MAPPINGS = "/v1/management/voice-mappings"


def audio_routes(state: AppState) -> list[Route]:
    """The fast-path routes of the family (speech streams audio as the upstream makes it)."""

    def answer_speech(principal: Principal, body: bytes, headers: Mapping[str, str]) -> Answering:
        return serve_speech(state, principal, body, headers)

    return [Route("POST", SPEECH_PATH, answer_speech)]


async def _whole(
    state: AppState,
    principal: Principal,
    upload: Upload,
    headers: Mapping[str, str],
    *,
    translate: bool,
) -> Response:
    """A whole transcription or translation; the upload is closed on every path."""
    try:
        answer = await serve_transcription(state, principal, upload, headers, translate=translate)
    finally:
        upload.close()
    return Response(answer.body, headers=dict(answer.headers), content_type=answer.media_type)


def audio_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("audio", __name__)

    @bp.post(TRANSCRIPTIONS_PATH)
    async def transcriptions() -> Response:
        principal = await state.auth.caller()
        headers = cast(Mapping[str, str], request.headers)
        upload = await read_upload(request.body, request.headers.get("content-type"))
        if upload.fields.get("stream", [""])[-1].lower() == "true":
            # The body reads the spooled clip while it streams, and closes the upload.
            body = await prepare_stream(state, principal, upload, headers)
            return stream_response(StreamAnswer(body, {"Cache-Control": "no-cache"}))
        return await _whole(state, principal, upload, headers, translate=False)

    @bp.post(TRANSLATIONS_PATH)
    async def translations() -> Response:
        principal = await state.auth.caller()
        headers = cast(Mapping[str, str], request.headers)
        upload = await read_upload(request.body, request.headers.get("content-type"))
        return await _whole(state, principal, upload, headers, translate=True)

    @bp.get("/v1/audio/voices")
    async def voices() -> Response:
        await state.auth.caller()
        query = {k: v for k, v in request.args.items()}
        return json_response(voice_views.voices_listing(load_voices(), query, state.catalog))

    @bp.get("/v1/audio/voices/<voice_id>")
    async def voice(voice_id: str) -> Response:
        await state.auth.caller()
        found = voice_views.voice_or_404(load_voices(), voice_id)
        return json_response(voice_views.voice_body(found, detail=True))

    @bp.get("/v1/audio/voices/<voice_id>/preview")
    async def preview(voice_id: str) -> Response:
        principal = await state.auth.caller()
        found = voice_views.voice_or_404(load_voices(), voice_id)
        headers = cast(Mapping[str, str], request.headers)
        audio, answer_headers = await speak_preview(state, principal, found, headers)
        return Response(audio, headers=answer_headers, content_type="audio/mpeg")

    _mapping_routes(bp, state)
    return bp


def _mapping_routes(bp: Blueprint, state: AppState) -> None:
    """Voice mappings are workspace configuration: reading them needs the role's
    `view_configuration`, changing them `configure_providers` (`gateway.audio.mappings`)."""

    @bp.post(MAPPINGS)
    async def create_mapping() -> Response:
        principal = await state.auth.manager("configure_providers")
        return json_response(await mappings.create(state, principal, await read_object()), 201)

    @bp.get(MAPPINGS)
    async def list_mappings() -> Response:
        principal = await state.auth.manager("view_configuration")
        return json_response(await mappings.list_mappings(state, principal))

    @bp.get(f"{MAPPINGS}/<mapping_id>")
    async def get_mapping(mapping_id: str) -> Response:
        principal = await state.auth.manager("view_configuration")
        return json_response(await mappings.read(state, principal, mapping_id))

    @bp.route(f"{MAPPINGS}/<mapping_id>", methods=["PATCH", "PUT"])
    async def update_mapping(mapping_id: str) -> Response:
        principal = await state.auth.manager("configure_providers")
        body = await read_object()
        partial = request.method == "PATCH"
        return json_response(
            await mappings.update(state, principal, mapping_id, body, partial=partial)
        )

    @bp.delete(f"{MAPPINGS}/<mapping_id>")
    async def delete_mapping(mapping_id: str) -> Response:
        principal = await state.auth.manager("configure_providers")
        return json_response(await mappings.delete(state, principal, mapping_id))
