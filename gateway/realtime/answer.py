"""One Realtime response: the model on the conversation, its words spoken sentence by
sentence, its function calls handed to the client, every step an event.

The response runs in its own cancel scope inside the session's nursery. Cancelling it
(barge-in, `response.cancel`, a truncate of the item being spoken) stops the model and
every synthesis and closes their upstreams at once (`gateway.kernels.voice.flow.answer`);
the events that close the response (`*.done`, `response.done` with status `cancelled`)
are sent after the scope, so they always go out. Audio is paced (`pacing.Pacer`): the
gateway runs at most the session's lead ahead of playback, so a cancelled answer keeps
in the history about what was heard, and wastes little synthesis.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from gateway.kernels.voice.flow import EVENT_BUFFER, Event, Trace, answer
from gateway.kernels.voice.session import Cascade, Responding, ToolCalls
from gateway.platform.errors import ApiError
from gateway.realtime.audio import SPEECH_RATE, OutputAudio
from gateway.realtime.config import SessionConfig, model_changes
from gateway.realtime.conversation import (
    Conversation,
    Item,
    Spoken,
    chat_messages,
    chat_tool_choice,
    chat_tools,
    truncated,
)
from gateway.realtime.events import RealtimeError, new_id
from gateway.realtime.pacing import Pacer
from gateway.realtime.states import ResponseEnd, ended
from gateway.upstream.accounting import estimate_tokens
from streams.sentences import SentenceSplitter

Emit = Callable[[Mapping[str, Any]], Awaitable[None]]
DEFAULT_MAX_TOKENS = 1024  # an answer's length when the session says "inf"


@attrs.frozen
class ResponseOptions:
    """A `response.create`'s overrides over the session's configuration."""

    config: SessionConfig
    instructions: str | None = None
    metadata: Mapping[str, Any] | None = None
    in_conversation: bool = True


def response_options(config: SessionConfig, raw: Any) -> ResponseOptions:
    """Read `response.create`'s `response` (RealtimeError when a field is wrong)."""
    if raw is None:
        return ResponseOptions(config)
    if not isinstance(raw, Mapping):
        raise RealtimeError("invalid_value", "'response' must be an object.", param="response")
    changes = model_changes(raw, "response")
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise RealtimeError("invalid_value", "'response.metadata' must be an object.")
    instructions = raw.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise RealtimeError("invalid_value", "'response.instructions' must be a string.")
    conversation = raw.get("conversation", "auto")
    return ResponseOptions(
        attrs.evolve(config, **changes),
        instructions or None,
        metadata,
        conversation != "none",
    )


@attrs.define
class Running:
    """The response being given: its scope, and what the session needs of it."""

    id: str
    options: ResponseOptions
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    finished: trio.Event = attrs.field(factory=trio.Event)
    cancel_reason: str | None = None
    cancel_requested: float | None = None
    turn_ended: float | None = None  # VAD heard the end of the turn that started it
    message: Item | None = None  # the assistant message being spoken

    def cancel(self, reason: str) -> None:
        if self.cancel_requested is None:
            self.cancel_requested = trio.current_time()
            self.cancel_reason = reason
            self.scope.cancel()


@attrs.define
class AnswerContext:
    """What a response uses of its session."""

    emit: Emit
    conversation: Conversation
    cascade: Cascade
    output: OutputAudio
    lead_s: float
    # Waits for the input transcriptions; returns when the last one finished (None: none).
    transcribed: Callable[[], Awaitable[float | None]]
    vad_stopped: float | None = None


@attrs.define
class _Out:
    """What the response produced, for its closing events."""

    running: Running
    items: list[Item] = attrs.field(factory=list)
    announced: set[str] = attrs.field(factory=set)
    pacer: Pacer = attrs.field(factory=lambda: Pacer(1.0))
    sentence_s: float = 0.0
    error: ApiError | None = None
    trace: Trace | None = None
    limits: dict[str, str] = attrs.field(factory=dict)
    stages: Responding | None = None
    transcribed_at: float | None = None


async def run_response(context: AnswerContext, running: Running) -> None:
    """Give one response, from `response.created` to `response.done` and
    `rate_limits.updated`. Cancelling `running.scope` ends it as `cancelled`."""
    out = _Out(running, pacer=Pacer(context.lead_s))
    running.turn_ended = context.vad_stopped
    await context.emit({"type": "response.created", "response": _response_body(out, "in_progress")})
    with running.scope:
        try:
            out.transcribed_at = await context.transcribed()
            await _answer(context, out)
        except* ApiError as group:
            out.error = _first(group)
    how: ResponseEnd = "finished"
    if running.cancel_requested is not None:
        how = "cancelled"
    elif out.error is not None:
        how = "failed"
    await _close_items(context, out, cancelled=how == "cancelled")
    status = ended("in_progress", how)
    await context.emit({"type": "response.done", "response": _response_body(out, status)})
    await context.emit({"type": "rate_limits.updated", "rate_limits": _rate_limits(out.limits)})


async def _answer(context: AnswerContext, out: _Out) -> None:
    options, cascade = out.running.options, context.cascade
    config = options.config
    instructions = options.instructions or cascade.llm.instructions
    messages = chat_messages(context.conversation.items, instructions)
    max_tokens = config.max_output_tokens or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {
        "model": cascade.llm.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
    }
    if cascade.llm.temperature is not None:
        body["temperature"] = cascade.llm.temperature
    if config.tools:
        body["tools"] = chat_tools(config.tools)
        body["tool_choice"] = chat_tool_choice(config.tool_choice)
    calls = ToolCalls()
    stages = out.stages = cascade.response(body, calls)
    prompt = estimate_tokens(" ".join(str(m.get("content") or "") for m in messages))
    async with cascade.admitted(stages, prompt, max_tokens) as hold:
        out.trace = Trace(started=trio.current_time())
        await _speak(context, out, stages, speak=config.speaks)
        out.limits = hold.headers()
    await _function_calls(context, out, calls)


async def _speak(context: AnswerContext, out: _Out, stages: Responding, *, speak: bool) -> None:
    assert out.trace is not None
    trace = out.trace
    send, receive = trio.open_memory_channel[Event](EVENT_BUFFER)

    async def produce() -> None:
        async with send:
            await answer(stages, trace, send, speak=speak, mark_sentences=True)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        async with receive:
            async for event in receive:
                await _relay(context, out, event, speak=speak)


async def _relay(context: AnswerContext, out: _Out, event: Event, *, speak: bool) -> None:
    kind = event["type"]
    if kind == "llm.token":
        item = await _message(context, out, audio=speak)
        item.text += event["token"]
        name = "response.output_audio_transcript.delta" if speak else "response.output_text.delta"
        await context.emit(_part_event(name, out, item) | {"delta": event["token"]})
    elif kind == "audio.chunk":
        await _audio(context, out, event["data"])
    elif kind == "audio.sentence" and out.running.message is not None:
        ms = round(out.sentence_s * 1000)
        out.running.message.spoken.append(Spoken(event["text"], ms))
        out.sentence_s = 0.0


async def _audio(context: AnswerContext, out: _Out, pcm: bytes) -> None:
    """One piece of speech, no further ahead of playback than the lead allows."""
    item = await _message(context, out, audio=True)
    seconds = len(pcm) / 2 / SPEECH_RATE
    wait = out.pacer.delay(trio.current_time(), seconds)
    if wait:
        await trio.sleep(wait)
    data = base64.b64encode(context.output.encode(pcm)).decode()
    await context.emit(_part_event("response.output_audio.delta", out, item) | {"delta": data})
    out.pacer.sent(trio.current_time(), seconds)
    out.sentence_s += seconds


async def _message(context: AnswerContext, out: _Out, *, audio: bool) -> Item:
    """The response's assistant message, announced when its first word or sound comes."""
    item = out.running.message
    if item is not None:
        return item
    item = Item(new_id("item"), "message", role="assistant", audio=audio, status="in_progress")
    out.running.message = item
    out.items.append(item)
    previous = None
    if out.running.options.in_conversation:
        previous = context.conversation.add(item)
    index = len(out.items) - 1
    shown = item.body() | {"content": []}
    await context.emit(_item_event("response.output_item.added", out, index) | {"item": shown})
    if out.running.options.in_conversation:
        await context.emit(
            {"type": "conversation.item.added", "previous_item_id": previous, "item": shown}
        )
    part = item.part() | ({"transcript": ""} if audio else {"text": ""})
    await context.emit(_part_event("response.content_part.added", out, item) | {"part": part})
    out.announced.add(item.id)
    return item


async def _function_calls(context: AnswerContext, out: _Out, calls: ToolCalls) -> None:
    for call in calls.finished():
        item = Item(
            new_id("item"),
            "function_call",
            call_id=call["id"] or new_id("call"),
            name=call["name"],
            arguments=call["arguments"],
            status="in_progress",
        )
        out.items.append(item)
        index = len(out.items) - 1
        previous = context.conversation.add(item) if out.running.options.in_conversation else None
        shown = item.body() | {"arguments": ""}
        await context.emit(_item_event("response.output_item.added", out, index) | {"item": shown})
        if out.running.options.in_conversation:
            await context.emit(
                {"type": "conversation.item.added", "previous_item_id": previous, "item": shown}
            )
        out.announced.add(item.id)
        ids = _item_event("", out, index) | {"item_id": item.id, "call_id": item.call_id}
        await context.emit(
            ids | {"type": "response.function_call_arguments.delta", "delta": item.arguments}
        )
        await context.emit(
            ids
            | {
                "type": "response.function_call_arguments.done",
                "name": item.name,
                "arguments": item.arguments,
            }
        )


async def _close_items(context: AnswerContext, out: _Out, *, cancelled: bool) -> None:
    """Every item the response announced, finished (a cancelled message keeps what was
    played, as far as the gateway can tell)."""
    for index, item in enumerate(out.items):
        if item.id not in out.announced:
            continue
        if item is out.running.message:
            item = out.items[index] = _finished_message(out, item, cancelled=cancelled)
            if out.running.options.in_conversation:
                context.conversation.replace(item)
            await _close_parts(context, out, item)
        item.status = "incomplete" if cancelled else "completed"
        await context.emit(
            _item_event("response.output_item.done", out, index) | {"item": item.body()}
        )
        if out.running.options.in_conversation:
            await context.emit({"type": "conversation.item.done", "item": item.body()})


def _finished_message(out: _Out, item: Item, *, cancelled: bool) -> Item:
    trace = out.trace
    if not cancelled and trace is not None and trace.response:
        item.text = trace.response
        return item
    if item.audio and out.pacer.started is not None:
        played = out.pacer.played_ms(trio.current_time())
        pending = round(out.sentence_s * 1000)
        if pending:
            item.spoken.append(Spoken(_unspoken_tail(item), pending))
        return truncated(item, played)
    return item


def _unspoken_tail(item: Item) -> str:
    """The sentence being spoken when the answer stopped: the first sentence of what the
    model wrote that no finished sentence covers."""
    said = " ".join(" ".join(s.text for s in item.spoken).split())
    written = " ".join(item.text.split())
    if not written.startswith(said):
        return ""
    splitter = SentenceSplitter()
    sentences = [*splitter.feed(written[len(said) :]), *splitter.flush()]
    return sentences[0].strip() if sentences else ""


async def _close_parts(context: AnswerContext, out: _Out, item: Item) -> None:
    if item.audio:
        await context.emit(_part_event("response.output_audio.done", out, item))
        await context.emit(
            _part_event("response.output_audio_transcript.done", out, item)
            | {"transcript": item.text}
        )
    else:
        await context.emit(
            _part_event("response.output_text.done", out, item) | {"text": item.text}
        )
    await context.emit(_part_event("response.content_part.done", out, item) | {"part": item.part()})


def _item_event(kind: str, out: _Out, index: int) -> dict[str, Any]:
    return {"type": kind, "response_id": out.running.id, "output_index": index}


def _part_event(kind: str, out: _Out, item: Item) -> dict[str, Any]:
    index = out.items.index(item)
    return _item_event(kind, out, index) | {"item_id": item.id, "content_index": 0}


def _response_body(out: _Out, status: str) -> dict[str, Any]:
    options = out.running.options
    body: dict[str, Any] = {
        "id": out.running.id,
        "object": "realtime.response",
        "status": status,
        "status_details": _status_details(out, status),
        "output": [item.body() for item in out.items] if status != "in_progress" else [],
        "conversation_id": "conv_default" if options.in_conversation else None,
        "output_modalities": list(options.config.output_modalities),
        "max_output_tokens": options.config.max_output_tokens or "inf",
        "audio": {
            "output": {"format": options.config.output_format.body(), "voice": options.config.voice}
        },
        "usage": _usage(out) if status != "in_progress" else None,
        "metadata": dict(options.metadata) if options.metadata is not None else None,
    }
    if status != "in_progress":
        body["latency"] = _latency(out)
    return body


def _status_details(out: _Out, status: str) -> dict[str, Any] | None:
    if status == "cancelled":
        return {"type": "cancelled", "reason": out.running.cancel_reason or "client_cancelled"}
    if status == "failed" and out.error is not None:
        error = {"type": out.error.type, "code": out.error.code, "message": out.error.message}
        return {"type": "failed", "error": error}
    return None


def _usage(out: _Out) -> dict[str, Any]:
    metered = out.stages.metered if out.stages is not None else None
    prompt = metered.prompt_tokens if metered else 0
    completion = metered.completion_tokens if metered else 0
    return {
        "total_tokens": prompt + completion,
        "input_tokens": prompt,
        "output_tokens": completion,
        "input_token_details": {"text_tokens": prompt, "audio_tokens": 0, "cached_tokens": 0},
        "output_token_details": {"text_tokens": completion, "audio_tokens": 0},
        "gateway": metered.body() if metered else {},
    }


def _latency(out: _Out) -> dict[str, int]:
    """The gateway's figures (milliseconds): recognition from the end of the user's
    speech (VAD), the model's first sentence, speech's first byte, and from the end of
    the speech to the first audio sent (what a voice agent is judged by)."""
    figures: dict[str, int] = {}
    trace, turn_ended = out.trace, out.running.turn_ended
    if turn_ended is not None and out.transcribed_at is not None:
        figures["transcription_ms"] = _ms(out.transcribed_at - turn_ended)
    if trace is not None and trace.tts_started is not None:
        figures["llm_first_sentence_ms"] = _ms(trace.tts_started - trace.started)
        if trace.first_audio is not None:
            figures["tts_first_byte_ms"] = _ms(trace.first_audio - trace.tts_started)
    if turn_ended is not None and out.pacer.started is not None:
        figures["speech_end_to_first_audio_ms"] = _ms(out.pacer.started - turn_ended)
    return figures


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _rate_limits(headers: Mapping[str, str]) -> list[dict[str, Any]]:
    """The key's limits after the response, from its rate-limit headers (none: the key
    has no limits)."""
    limits = []
    for name, suffix in (("requests", "Requests"), ("tokens", "Tokens")):
        limit = headers.get(f"X-RateLimit-Limit-{suffix}")
        remaining = headers.get(f"X-RateLimit-Remaining-{suffix}")
        if limit is None or remaining is None:
            continue
        reset = headers.get(f"X-RateLimit-Reset-{suffix}", "0s")
        limits.append(
            {
                "name": name,
                "limit": int(limit),
                "remaining": int(remaining),
                "reset_seconds": _seconds(reset),
            }
        )
    return limits


def _seconds(duration: str) -> float:
    """`850ms`, `12.5s`, `1m0s` as seconds."""
    if duration.endswith("ms"):
        return float(duration[:-2]) / 1000
    minutes, _, rest = duration.rpartition("m")
    return (float(minutes) * 60 if minutes else 0.0) + float(rest.rstrip("s") or 0)


def _first(group: BaseExceptionGroup[ApiError]) -> ApiError:
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            return _first(error)
        return error
    raise AssertionError("an empty exception group")
