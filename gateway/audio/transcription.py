"""Serving POST /v1/audio/transcriptions and /v1/audio/translations: check the upload,
plan, race, render. A translation is a transcription asking for English text
(`gateway.audio.translation` says which candidates can); it is never streamed.

The upload has been spooled (`gateway.kernels.uploads.spooled`); here its container is
checked by its bytes and its length measured by decoding (in a worker thread), so an
empty, truncated or non-audio file is a 400 before anything is charged. Usage is the
audio's seconds, priced per minute from the catalog.

Options only some models honour (`diarize` and `context_bias`, Voxtral's; word
timestamps, `prompt`, `temperature`) are checked against the plan (`gateway.audio.fit`):
a named model that cannot honour one is a 400 `unsupported_parameter`, and the
candidates that cannot are left out of its fallbacks.

A streamed transcription is answered through Quart, which sends the response head before
the body starts, so the race runs when the body is entered: a chain that fails then, or
an upstream that breaks after its first words, is reported in-band as an `error` event
(the status line is already 200) and recorded with the mapped error.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager

import attrs
import trio

from gateway.audio.fit import chunked_enough, honoured, transcription_refusal
from gateway.audio.input import TranscriptionParams, parse_transcription, parse_translation
from gateway.audio.plan import admit_audio, audio_plan
from gateway.audio.render import (
    MEDIA_TYPES,
    delta_frame,
    done_event,
    error_event,
    render_transcription,
    segment_event,
)
from gateway.audio.services import AudioServices
from gateway.audio.translation import ENDPOINT as TRANSLATIONS
from gateway.audio.translation import translation_plan
from gateway.kernels.uploads.spooled import HEAD_BYTES, Upload
from gateway.kernels.voice.errors import audio_errors
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.deprecation import warn_if_deprecated
from gateway.upstream.engine import Called, Streaming
from gateway.upstream.facts import RequestFacts, new_facts
from gateway.upstream.limits import Hold
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.audio_codec import AudioDecodeError, decoded_duration, sniff_container
from providers.audio_types import (
    AudioClip,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.base import Provider
from providers.clip_source import BytesSource, ClipSource
from providers.errors import ProviderError
from providers.types import Usage

DIARIZING_MODEL = "voxtral-mini-latest"  # what asks for diarization without naming a model
ACCEPTED_CONTAINERS = frozenset({"wav", "mp3", "flac", "ogg", "webm", "mp4", "aac", "mpeg"})

ENDPOINT = "audio.transcriptions"


def endpoint_of(translate: bool) -> str:
    """The usage records' endpoint: translations are counted apart from transcriptions."""
    return TRANSLATIONS if translate else ENDPOINT


@attrs.frozen
class Transcribed:
    """A whole transcription, rendered: body, media type and headers."""

    body: bytes
    media_type: str
    headers: Mapping[str, str]


async def checked_clip(upload: Upload) -> AudioClip:
    """The upload as audio whose container and length were read from its bytes; 400 when
    it is not audio this gateway accepts. The clip reads the upload's spool in place:
    it is valid until the upload is closed."""
    _check_container(upload.head())

    def measure() -> AudioClip:
        return measured_source(upload.source(), upload.filename or "audio")

    return await trio.to_thread.run_sync(measure)


def measured_clip(data: bytes, filename: str) -> AudioClip:
    """`data` as a clip whose container and length come from decoding it (blocking: call
    from a worker thread); 400 `invalid_audio` when it is not audio this gateway accepts."""
    return measured_source(BytesSource(data), filename)


def measured_source(source: ClipSource, filename: str) -> AudioClip:
    """`measured_clip` for a clip left where it is: decoded frame by frame from a reader
    of its own, so only one decoded frame is held at a time (blocking)."""
    with source.open() as reader:
        container = _check_container(reader.read(HEAD_BYTES))
        reader.seek(0)
        try:
            duration_s = decoded_duration(reader)
        except AudioDecodeError as exc:
            raise ApiError(400, "invalid_audio", _decode_message(exc), param="file") from None
    return AudioClip(source, str(container), duration_s, filename)


def _decode_message(exc: AudioDecodeError) -> str:
    """The client's message: the decoder's own words (an errno, `'<none>'`) say nothing
    a caller can act on."""
    if "holds no audio" in str(exc):
        return "The file holds no audio."
    return "The file could not be decoded as audio: it is truncated or corrupted."


def _check_container(head: bytes) -> str:
    container = sniff_container(head)
    if container not in ACCEPTED_CONTAINERS:
        raise ApiError(
            400,
            "invalid_audio",
            "The file is not audio in a supported format (mp3, mp4, mpeg, mpga, m4a, wav, "
            "webm, flac, ogg); its content was checked, not its name.",
            param="file",
        )
    return str(container)


def transcription_plan(
    services: AudioServices,
    principal: Principal,
    params: TranscriptionParams,
    *,
    seconds: float = 0.0,
) -> Plan:
    """The candidates for `params` that can honour every option asked of them (and, for
    `seconds` of audio, take it in the way asked)."""
    plan = audio_plan(
        services,
        principal,
        model=params.model,
        capability="transcription",
        service=params.service,
        prefer=params.prefer,
    )
    if params.translate:
        plan = translation_plan(services, principal, params, plan)
    plan = honoured(plan, transcription_refusal(params), named=params.model != "auto")
    return chunked_enough(plan, params, seconds)


def transcription_request(
    params: TranscriptionParams, clip: AudioClip, target: Target
) -> TranscriptionRequest:
    return TranscriptionRequest(
        model=target.upstream_model,
        audio=clip,
        language=params.language,
        prompt=params.prompt,
        temperature=params.temperature,
        word_timestamps=params.words,
        diarize=params.speakers,
        context_bias=params.domain_words,
        translate=params.translate,
        logprobs=params.logprobs,
        chunking=params.chunking,
        languages=params.languages,
        known_speakers=params.known_speakers,
    )


async def serve_transcription(
    services: AudioServices,
    principal: Principal,
    upload: Upload,
    headers: Mapping[str, str],
    *,
    translate: bool = False,
) -> Transcribed:
    """A whole transcription, or (`translate`) translation into English (raises
    `ApiError`; cancellation closes the upstream)."""
    principal.require("audio")
    facts = new_facts(endpoint_of(translate), principal, headers)
    with services.engine.usage.rejecting(facts, upload.model):
        parse = parse_translation if translate else parse_transcription
        params = parse(upload.fields)
        clip = await checked_clip(upload)
        plan = transcription_plan(services, principal, params, seconds=clip.duration_s)
    with audio_errors():
        done = await transcribe_clip(services, principal, clip, params, headers, plan=plan)
    served = done.served
    task = "translate" if params.translate else "transcribe"
    body = render_transcription(
        served.value, params.response_format, params.granularities, task=task
    )
    return Transcribed(
        body,
        MEDIA_TYPES[params.response_format],
        _headers(done.facts, served.target, served.fell_back) | done.limit_headers,
    )


@attrs.frozen
class ClipTranscribed:
    """A clip transcribed through the engine: its facts, what served it, and the key's
    rate-limit headers as of the answer."""

    facts: RequestFacts
    served: Called[TranscriptionResult]
    limit_headers: dict[str, str]


async def transcribe_clip(
    services: AudioServices,
    principal: Principal,
    clip: AudioClip,
    params: TranscriptionParams,
    headers: Mapping[str, str],
    *,
    plan: Plan | None = None,
) -> ClipTranscribed:
    """Plan (unless the caller has), admit and race one transcription (the engine
    accounts for it): what the endpoint and file processing (`auto_transcribe`) share.
    Raises `ApiError`; cancellation closes the upstream."""
    if plan is None:
        plan = transcription_plan(services, principal, params, seconds=clip.duration_s)
    facts = new_facts(endpoint_of(params.translate), principal, headers)
    usage = heard(clip)
    hold = await admit_audio(services, facts, plan, params.service, usage)

    async def operation(adapter: Provider, target: Target) -> TranscriptionResult:
        return await adapter.transcribe(transcription_request(params, clip, target))

    with hold:
        served = await services.engine.call(
            facts,
            plan,
            operation,
            hold=hold,
            timeout_s=services.settings.upstream_timeout_s,
            meter=lambda _: usage,
        )
        return ClipTranscribed(facts, served, hold.headers())


def heard(clip: AudioClip) -> Usage:
    """What transcribing `clip` meters: its seconds."""
    return Usage(audio_seconds=round(clip.duration_s, 3))


def _headers(facts: RequestFacts, target: Target, fell_back: bool) -> dict[str, str]:
    headers = {
        "X-Request-ID": facts.request_id,
        "X-Service-Provider": target.provider_id,
        "X-Service-Model": target.model_id,
        "X-Service-Latency-Ms": str(facts.elapsed_ms()),
        "X-Service-Fallback": "true" if fell_back else "false",
    }
    warn_if_deprecated(headers, target.info)
    return headers


# -- streamed ------------------------------------------------------------------------------


async def prepare_stream(
    services: AudioServices, principal: Principal, upload: Upload, headers: Mapping[str, str]
) -> TranscriptStreamBody:
    """Everything a streamed transcription checks before its 200 head: permission, fields,
    the audio itself, the plan and the key's limits.

    The returned body owns `upload` (its clip is read from the spool while the body runs)
    and closes it when it exits; on an error here, the upload is closed at once.
    """
    try:
        principal.require("audio")
        facts = new_facts(ENDPOINT, principal, headers)
        with services.engine.usage.rejecting(facts, upload.model):
            params = parse_transcription(upload.fields)
            clip = await checked_clip(upload)
            plan = transcription_plan(services, principal, params, seconds=clip.duration_s)
            hold = await admit_audio(
                services,
                facts,
                plan,
                params.service,
                Usage(audio_seconds=round(clip.duration_s, 3)),
            )
    except BaseException:
        upload.close()
        raise
    return TranscriptStreamBody(services, facts, plan, hold, params, clip, upload)


class TranscriptStreamBody:
    """SSE body of a streamed transcription (a `gateway.platform.body.StreamBody`).

    Opening it races the plan until one candidate gives its first text and holds that
    stream open; leaving closes it (and every loser), releases the key's hold and closes
    the upload whose spool the clip is read from; the engine records the usage once the
    transcription finished (or the client left). Cancellation (the client left) closes
    the upstream at once.
    """

    content_type = "text/event-stream"

    def __init__(
        self,
        services: AudioServices,
        facts: RequestFacts,
        plan: Plan,
        hold: Hold,
        params: TranscriptionParams,
        clip: AudioClip,
        upload: Upload,
    ) -> None:
        self._state, self._facts, self._plan, self._hold = services, facts, plan, hold
        self._params, self._clip, self._upload = params, clip, upload

    def head_headers(self) -> dict[str, str]:
        """The head's headers, sent before any candidate answered: the deprecation of
        the model the plan puts first (the one named)."""
        headers = {"Cache-Control": "no-cache"}
        warn_if_deprecated(headers, self._plan.primary.info)
        return headers

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AsyncIterator[bytes]]:
        try:
            with self._hold:
                async with self._frames() as frames:
                    yield frames
        finally:
            self._upload.close()  # the last thing leaving does

    @asynccontextmanager
    async def _frames(self) -> AsyncIterator[AsyncIterator[bytes]]:
        timeout = self._state.settings.upstream_timeout_s
        opening = self._state.engine.open_stream(
            self._facts, self._plan, self._opener, hold=self._hold, timeout_s=timeout
        )
        entered = False
        try:
            async with opening as stream:
                entered = True
                stream.metered = heard(self._clip)
                first, rest = stream.value
                async with aclosing(self._relayed(stream, first, rest)) as frames:
                    yield frames
                return
        except ApiError as error:
            if entered:
                raise
            failure = error  # no candidate: the head is sent, the failure travels in-band
        yield _single(error_event(failure.code, failure.message))

    @asynccontextmanager
    async def _opener(
        self, adapter: Provider, target: Target
    ) -> AsyncGenerator[tuple[TranscriptEvent, AsyncIterator[TranscriptEvent]], None]:
        request = transcription_request(self._params, self._clip, target)
        async with adapter.transcribe_stream(request) as events:
            async for event in events:
                yield event, events
                return
            raise ApiError(502, "provider_error", "The upstream ended without a transcription.")

    async def _relayed(
        self,
        stream: Streaming[tuple[TranscriptEvent, AsyncIterator[TranscriptEvent]]],
        first: TranscriptEvent,
        rest: AsyncIterator[TranscriptEvent],
    ) -> AsyncGenerator[bytes, None]:
        by_speaker = self._params.response_format == "diarized_json"
        segments_sent = False
        event: TranscriptEvent | None = first
        while event is not None:
            if isinstance(event, TranscriptDelta):
                segments_sent |= by_speaker and event.segment is not None
                yield delta_frame(event, by_speaker=by_speaker)
            elif isinstance(event, TranscriptDone):
                stream.finished(stream.metered)
                if by_speaker and not segments_sent:  # a vendor that gives them at the end
                    for segment in event.result.segments:
                        yield segment_event(segment)
                yield done_event(event.result)
                return
            try:
                event = await anext(rest, None)
            except ProviderError as error:  # broken after the head: told in-band, recorded
                failure = stream.failed(error)
                yield error_event(failure.code, failure.message)
                return


async def _single(frame: bytes) -> AsyncGenerator[bytes, None]:
    yield frame
