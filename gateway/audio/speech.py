"""Serving POST /v1/audio/speech: validate, plan with voices, race, relay the audio.

An answering context (`gateway.platform.body.Answering`) served by the fast path: its
entry admits, races the plan and holds the winner open; the body relays audio; the engine
settles the key's limits and writes the one usage record (characters, priced per
character from the catalog) when the answer is whole, or when the client left. The answer
streams unless the body says `stream: false`, as OpenAI's does: chunked, its first bytes
right behind the vendor's; `stream_format: "sse"` writes them as OpenAI's
`speech.audio.delta` events, then `speech.audio.done`. A non-streamed answer is whole
before the head is sent, so it carries `Content-Length`.
Audio a vendor could not produce in the asked format is re-encoded here (PyAV, in a
thread), so every `response_format` is really that format.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import attrs
import orjson
import trio

from gateway.audio.fit import honoured, speech_refusal
from gateway.audio.input import SpeechParams, parse_speech, with_mapping_defaults
from gateway.audio.plan import (
    VoiceChoice,
    admit_audio,
    audio_plan,
    resolve_voice,
    voiced_targets,
)
from gateway.audio.services import AudioServices
from gateway.audio.voices import mapping_record_named
from gateway.kernels.voice.errors import audio_errors
from gateway.platform.auth import Principal
from gateway.platform.body import Answer, InlineBody, StreamAnswer
from gateway.platform.web import decode_json
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.deprecation import warn_if_deprecated
from gateway.upstream.engine import Called, Served
from gateway.upstream.facts import RequestFacts, new_facts
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.audio_codec import decode, encode
from providers.audio_types import CONTENT_TYPES, SpeechAudio, SpeechRequest
from providers.base import Provider
from providers.types import Usage
from providers.voices import load_voices

SPEECH_PATH = "/v1/audio/speech"
T = TypeVar("T")


@asynccontextmanager
async def serve_speech(
    services: AudioServices, principal: Principal, body: bytes, headers: Mapping[str, str]
) -> AsyncGenerator[Answer, None]:
    """Answer one speech request (see the module docstring). Raises `ApiError` for
    client mistakes and upstream failures; cancellation closes the upstream and propagates."""
    principal.require("audio")
    facts = new_facts("audio.speech", principal, headers)
    payload = None
    with services.engine.usage.rejecting(facts, lambda: _named(payload)):
        payload = decode_json(body) if body else None
        params = parse_speech(payload)
        mapping = await mapping_record_named(services, principal.workspace_id, params.voice)
        if mapping is not None:
            params = with_mapping_defaults(params, mapping.default_settings)
        voices = mapping.mappings if mapping is not None else None
        choice = resolve_voice(load_voices(), params.voice, voices)
        plan = audio_plan(
            services,
            principal,
            model=params.model,
            capability="speech",
            service=params.service,
            prefer=params.prefer,
        )
        asked = plan.primary if params.model != "auto" else None
        plan = honoured(plan, speech_refusal(params), named=asked is not None)
        plan = voiced_targets(plan, choice)
    if params.stream:
        usage = Usage(characters=len(params.input))
        hold = await admit_audio(services, facts, plan, params.service, usage)
        timeout = services.settings.upstream_timeout_s
        with hold, audio_errors():
            opener = _opener(params, choice)
            opening = services.engine.open_stream(facts, plan, opener, hold=hold, timeout_s=timeout)
            async with opening as stream:
                stream.metered = usage  # what a client that leaves has cost too
                first, rest = stream.value
                shown = _as_asked(stream.served, asked)
                yield _streamed(facts, shown, params, first, rest, hold.headers())
                stream.finished(usage)
            return
    facts, whole, limits = await speak_once(
        services, principal, params, plan, choice, headers, endpoint="audio.speech"
    )
    yield _whole(facts, _as_asked(whole, asked), params, limits)


def _as_asked(served: Served[T], asked: Target | None) -> Served[T]:
    """`served` measured against the model the request named: when that model was left
    out for want of the voice (`voiced_targets`), another model served, and
    `X-Service-Fallback` says so."""
    if asked is None or asked == served.primary:
        return served
    return attrs.evolve(served, primary=asked)


def _named(payload: object) -> object:
    return payload.get("model") if isinstance(payload, dict) else None


async def speak_once(
    services: AudioServices,
    principal: Principal,
    params: SpeechParams,
    plan: Plan,
    choice: VoiceChoice,
    headers: Mapping[str, str],
    *,
    endpoint: str,
) -> tuple[RequestFacts, Called[bytes], dict[str, str]]:
    """Synthesise the whole clip: admit, then the engine's race (which settles and
    records). Returns the facts, what served and the key's rate-limit headers."""
    facts = new_facts(endpoint, principal, headers)
    usage = Usage(characters=len(params.input))
    hold = await admit_audio(services, facts, plan, params.service, usage)
    with hold, audio_errors():
        served = await services.engine.call(
            facts,
            plan,
            _operation(params, choice),
            hold=hold,
            timeout_s=services.settings.upstream_timeout_s,
            meter=lambda _: usage,
        )
        return facts, served, hold.headers()


def speech_request(params: SpeechParams, target: Target, choice: VoiceChoice) -> SpeechRequest:
    voice = choice.for_provider(target.provider_id)
    assert voice is not None  # voiced_targets kept only candidates with a voice
    return SpeechRequest(
        model=target.upstream_model,
        input=params.input,
        voice=voice,
        response_format=params.response_format,
        speed=params.speed,
        voice_settings=params.voice_settings,
        instructions=params.instructions,
    )


def _operation(
    params: SpeechParams, choice: VoiceChoice
) -> Callable[[Provider, Target], Awaitable[bytes]]:
    async def speak(adapter: Provider, target: Target) -> bytes:
        audio = await adapter.speech(speech_request(params, target, choice))
        return await _in_format(audio, params)

    return speak


async def _in_format(audio: SpeechAudio, params: SpeechParams) -> bytes:
    """The audio in the asked format, re-encoded off the loop when the vendor sent another."""
    if audio.format == params.response_format:
        return audio.data
    wanted = params.response_format

    def convert() -> bytes:
        return encode(decode(audio.data, rate=24_000), wanted)

    return await trio.to_thread.run_sync(convert)


def _opener(
    params: SpeechParams, choice: VoiceChoice
) -> Callable[[Provider, Target], AbstractAsyncContextManager[tuple[bytes, AsyncIterator[bytes]]]]:
    @asynccontextmanager
    async def first_bytes(
        adapter: Provider, target: Target
    ) -> AsyncIterator[tuple[bytes, AsyncIterator[bytes]]]:
        """The upstream stream, entered and read up to its first bytes (what the race waits
        for); the stream stays open for the block."""
        async with adapter.speech_stream(speech_request(params, target, choice)) as chunks:
            first = b""
            async for chunk in chunks:
                if chunk:
                    first = chunk
                    break
            yield first, chunks

    return first_bytes


def _headers(facts: RequestFacts, served: Served[Any], limits: Mapping[str, str]) -> dict[str, str]:
    target = served.target
    headers = {
        "X-Request-ID": facts.request_id,
        "X-Service-Provider": target.provider_id,
        "X-Service-Model": target.model_id,
        "X-Service-Latency-Ms": str(facts.elapsed_ms()),
        "X-Service-Fallback": "true" if served.fell_back else "false",
    } | dict(limits)
    warn_if_deprecated(headers, target.info)
    return headers


def speech_body_headers(
    facts: RequestFacts, served: Served[bytes], limits: Mapping[str, str], data: bytes
) -> dict[str, str]:
    return _headers(facts, served, limits) | {"Content-Length": str(len(data))}


def _whole(
    facts: RequestFacts, served: Served[bytes], params: SpeechParams, limits: Mapping[str, str]
) -> StreamAnswer:
    data = served.value
    body = InlineBody(_nothing(), content_type=CONTENT_TYPES[params.response_format], first=data)
    return StreamAnswer(body, speech_body_headers(facts, served, limits, data))


def _streamed(
    facts: RequestFacts,
    served: Served[tuple[bytes, AsyncIterator[bytes]]],
    params: SpeechParams,
    first: bytes,
    rest: AsyncIterator[bytes],
    limits: Mapping[str, str],
) -> StreamAnswer:
    """The audio as the vendor gives it; with `stream_format: "sse"`, each piece as a
    `speech.audio.delta` event (its bytes base64, in the asked format), then
    `speech.audio.done` with the usage."""
    headers = _headers(facts, served, limits)
    if params.stream_format == "sse":
        events = _sse(rest, params)
        body = InlineBody(events, content_type="text/event-stream", first=_sse_event(_delta(first)))
        return StreamAnswer(body, headers | {"Cache-Control": "no-cache"})
    body = InlineBody(rest, content_type=CONTENT_TYPES[params.response_format], first=first)
    return StreamAnswer(body, headers)


async def _sse(rest: AsyncIterator[bytes], params: SpeechParams) -> AsyncGenerator[bytes, None]:
    async for chunk in rest:
        if chunk:
            yield _sse_event(_delta(chunk))
    tokens = estimate_tokens(params.input)
    usage = {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}
    yield _sse_event({"type": "speech.audio.done", "usage": usage})


def _delta(chunk: bytes) -> dict[str, str]:
    return {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}


def _sse_event(event: Mapping[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


async def _nothing() -> AsyncGenerator[bytes, None]:
    return
    yield  # an async generator that ends at once
