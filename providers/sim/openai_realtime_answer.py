"""A response of the simulator's Realtime session (`providers.sim.openai_realtime`): a
function call, or the model's words as text or as speech, every step an event.

The answer is decided as the simulator's chat decides it (`content.wants_tool_call` after
a user turn when tools are set; else the next scripted reply or prose on the last thing
said). Speech is eSpeak NG's, sentence by sentence: each sentence's transcript deltas,
then its audio (24 kHz PCM16) in 100 ms pieces paced to real time with `LEAD_S` ahead,
as a real-time service is: so a barge-in interrupts an answer while it is being spoken.
Cancelling the response's scope (barge-in, `response.cancel`, a truncate of the item
being spoken) stops it; the closing events and `response.done` (`cancelled`) always go
out. `usage` counts text tokens at ~4 characters a token and audio at
`AUDIO_IN_TOKENS_PER_S` / `AUDIO_OUT_TOKENS_PER_S` (the simulator's rates).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from providers.sim import content
from providers.sim.core import SimContext
from providers.types import ToolCall
from streams.sentences import SentenceSplitter

Emit = Callable[[dict[str, Any]], Awaitable[None]]
RATE = 24_000
PIECE_BYTES = RATE * 2 // 10  # 100 ms of audio a delta
LEAD_S = 1.0
AUDIO_IN_TOKENS_PER_S = 10
AUDIO_OUT_TOKENS_PER_S = 20


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(10).hex()}"


@attrs.define
class Item:
    """A conversation item: a user turn (`heard`: what its audio said), a client's
    message or function output, or the response's message or function call."""

    id: str
    type: str
    role: str | None = None
    status: str = "completed"
    heard: str = ""
    text: str = ""
    audio: bool = False
    audio_s: float = 0.0
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    output: str = ""

    @classmethod
    def from_client(cls, raw: Mapping[str, Any]) -> Item:
        parts = raw.get("content") or []
        text = " ".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))
        return cls(
            str(raw.get("id") or new_id("item")),
            str(raw["type"]),
            role=raw.get("role"),
            text=text,
            call_id=str(raw.get("call_id") or ""),
            output=str(raw.get("output") or ""),
        )

    def said(self) -> str:
        """What the item says, as the model reads it."""
        return self.heard or self.text or self.output or self.arguments

    def body(self) -> dict[str, Any]:
        common = {"id": self.id, "object": "realtime.item", "type": self.type}
        if self.type == "function_call":
            return common | {
                "status": self.status,
                "call_id": self.call_id,
                "name": self.name,
                "arguments": self.arguments,
            }
        if self.type == "function_call_output":
            return common | {"call_id": self.call_id, "output": self.output}
        return common | {"role": self.role, "status": self.status, "content": [self.part()]}

    def part(self) -> dict[str, Any]:
        if self.role == "user":
            if self.heard or self.audio_s:
                return {"type": "input_audio", "transcript": None}
            return {"type": "input_text", "text": self.text}
        if self.audio:
            return {"type": "output_audio", "transcript": self.text}
        return {"type": "output_text", "text": self.text}


def truncate_item(item: Item, end_ms: int) -> None:
    """Cut an assistant's spoken message to its first `end_ms` of audio: its transcript
    keeps the share of its words that played."""
    if not item.audio or not item.audio_s:
        return
    share = min(1.0, end_ms / 1000 / item.audio_s)
    words = item.text.split()
    item.text = " ".join(words[: int(len(words) * share)])
    item.audio_s = min(item.audio_s, end_ms / 1000)


@attrs.frozen
class ResponseParams:
    """The session's configuration with a `response.create`'s overrides."""

    instructions: str
    modalities: Sequence[str]
    voice: str
    tools: Sequence[Any]
    tool_choice: Any
    max_output_tokens: int | str
    metadata: Mapping[str, Any] | None = None
    in_conversation: bool = True

    @classmethod
    def of(cls, session: Any, raw: Any) -> ResponseParams:
        raw = {k: v for k, v in raw.items() if v is not None} if isinstance(raw, dict) else {}
        output = (raw.get("audio") or {}).get("output") or {}
        return cls(
            raw.get("instructions", session.instructions),
            raw.get("output_modalities", session.modalities),
            output.get("voice") or session.voice,
            raw.get("tools", session.tools),
            raw.get("tool_choice", session.tool_choice),
            raw.get("max_output_tokens", session.max_output_tokens),
            raw.get("metadata"),
            raw.get("conversation", "auto") != "none",
        )


@attrs.define
class Running:
    """The response being given: its scope, and what the session needs of it."""

    id: str
    params: ResponseParams
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    finished: trio.Event = attrs.field(factory=trio.Event)
    reason: str | None = None
    message: Item | None = None
    output: list[Item] = attrs.field(factory=list)
    audio_sent_s: float = 0.0
    # Called once the response is over, before its `response.done` goes out (a client
    # that answers that event at once finds the conversation free).
    ended: Callable[[], None] = lambda: None

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.scope.cancel()


async def run_response(emit: Emit, items: list[Item], ctx: SimContext, running: Running) -> None:
    """From `response.created` to `response.done` and `rate_limits.updated`."""
    prompt_text = [running.params.instructions, *(item.said() for item in items)]
    prompt_audio = sum(item.audio_s for item in items if item.role == "user")
    await emit({"type": "response.created", "response": _body(running, "in_progress", None)})
    with running.scope:
        await _produce(emit, items, ctx, running)
    status = "cancelled" if running.reason is not None else "completed"
    for index, item in enumerate(running.output):
        item.status = "incomplete" if running.reason else "completed"
        if item is running.message:
            await _close_parts(emit, running, item)
        await emit(_at(running, index, "response.output_item.done") | {"item": item.body()})
        if running.params.in_conversation:
            await emit({"type": "conversation.item.done", "item": item.body()})
    usage = _usage(running, content.count_prompt_tokens(prompt_text), prompt_audio)
    running.ended()  # the next response.create is welcome from here, as OpenAI's is
    await emit({"type": "response.done", "response": _body(running, status, usage)})
    limits = [{"name": "tokens", "limit": 40_000, "remaining": 39_000, "reset_seconds": 1.5}]
    await emit({"type": "rate_limits.updated", "rate_limits": limits})


async def _produce(emit: Emit, items: list[Item], ctx: SimContext, running: Running) -> None:
    params = running.params
    last = items[-1] if items else None
    last_role = "tool" if last is not None and last.type == "function_call_output" else "user"
    prompt = last.said() if last is not None else ""
    if content.wants_tool_call(params.tools, params.tool_choice, last_role):
        function = content.pick_tool(params.tools, params.tool_choice, prompt)
        if function is not None:
            await _call(emit, items, running, content.plan_tool_call(function, prompt))
            return
    limit = params.max_output_tokens
    tokens = ctx.reply_tokens(prompt, limit if isinstance(limit, int) else 4096)
    message = Item(new_id("item"), "message", role="assistant", status="in_progress")
    message.audio = "audio" in params.modalities
    await _announce(emit, items, running, message)
    if message.audio:
        await _speak(emit, ctx, running, message, tokens)
        return
    async for group in ctx.pace(tokens, None):
        message.text += "".join(group)
        delta = {"delta": "".join(group)}
        await emit(_part(running, message, "response.output_text.delta") | delta)


async def _announce(emit: Emit, items: list[Item], running: Running, item: Item) -> None:
    running.output.append(item)
    if item.type == "message":
        running.message = item
    previous = items[-1].id if items else None
    if running.params.in_conversation:
        items.append(item)
    index = len(running.output) - 1
    shown = item.body()
    await emit(_at(running, index, "response.output_item.added") | {"item": shown})
    if running.params.in_conversation:
        added = {"type": "conversation.item.added", "previous_item_id": previous}
        await emit(added | {"item": shown})
    if item.type == "message":
        await emit(_part(running, item, "response.content_part.added") | {"part": item.part()})


async def _call(emit: Emit, items: list[Item], running: Running, call: ToolCall) -> None:
    item = Item(new_id("item"), "function_call", status="in_progress", call_id=call.id)
    item.name = call.name
    await _announce(emit, items, running, item)
    item.arguments = call.arguments
    index = running.output.index(item)
    ids = _at(running, index, "") | {"item_id": item.id, "call_id": item.call_id}
    await emit(ids | {"type": "response.function_call_arguments.delta", "delta": call.arguments})
    done = {"type": "response.function_call_arguments.done", "name": call.name}
    await emit(ids | done | {"arguments": call.arguments})


async def _speak(
    emit: Emit, ctx: SimContext, running: Running, message: Item, tokens: list[str]
) -> None:
    """Each sentence's transcript, then its audio, paced to real time (`LEAD_S` ahead)."""
    splitter = SentenceSplitter()
    sentences = [*splitter.feed("".join(tokens)), *splitter.flush()]
    started: float | None = None
    for sentence in sentences:
        spoken = (" " if message.text else "") + sentence.strip()
        message.text += spoken
        kind = "response.output_audio_transcript.delta"
        await emit(_part(running, message, kind) | {"delta": spoken})
        pcm, _ = await ctx.audio().synthesise_timed(sentence, "pcm", RATE)
        for start in range(0, len(pcm), PIECE_BYTES):
            piece = pcm[start : start + PIECE_BYTES]
            seconds = len(piece) / 2 / RATE
            now = trio.current_time()
            started = now if started is None else started
            ahead = running.audio_sent_s + seconds - (now - started) - LEAD_S
            if ahead > 0:
                await trio.sleep(ahead)
            delta = base64.b64encode(piece).decode()
            await emit(_part(running, message, "response.output_audio.delta") | {"delta": delta})
            running.audio_sent_s += seconds
            message.audio_s = running.audio_sent_s


async def _close_parts(emit: Emit, running: Running, item: Item) -> None:
    if item.audio:
        await emit(_part(running, item, "response.output_audio.done"))
        done = _part(running, item, "response.output_audio_transcript.done")
        await emit(done | {"transcript": item.text})
    else:
        await emit(_part(running, item, "response.output_text.done") | {"text": item.text})
    await emit(_part(running, item, "response.content_part.done") | {"part": item.part()})


def _at(running: Running, index: int, kind: str) -> dict[str, Any]:
    return {"type": kind, "response_id": running.id, "output_index": index}


def _part(running: Running, item: Item, kind: str) -> dict[str, Any]:
    index = running.output.index(item)
    return _at(running, index, kind) | {"item_id": item.id, "content_index": 0}


def _usage(running: Running, prompt_text: int, prompt_audio_s: float) -> dict[str, Any]:
    audio_in = round(prompt_audio_s * AUDIO_IN_TOKENS_PER_S)
    said = " ".join(item.text or item.arguments for item in running.output)
    text_out = content.count_tokens(said) if said else 0
    audio_out = round(running.audio_sent_s * AUDIO_OUT_TOKENS_PER_S)
    return {
        "total_tokens": prompt_text + audio_in + text_out + audio_out,
        "input_tokens": prompt_text + audio_in,
        "output_tokens": text_out + audio_out,
        "input_token_details": {
            "text_tokens": prompt_text,
            "audio_tokens": audio_in,
            "cached_tokens": 0,
            "cached_tokens_details": {"text_tokens": 0, "audio_tokens": 0},
        },
        "output_token_details": {"text_tokens": text_out, "audio_tokens": audio_out},
    }


def _body(running: Running, status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    params = running.params
    details = None
    if status == "cancelled":
        details = {"type": "cancelled", "reason": running.reason}
    return {
        "id": running.id,
        "object": "realtime.response",
        "status": status,
        "status_details": details,
        "output": [item.body() for item in running.output] if status != "in_progress" else [],
        "conversation_id": "conv_sim" if params.in_conversation else None,
        "output_modalities": list(params.modalities),
        "max_output_tokens": params.max_output_tokens,
        "audio": {"output": {"format": {"type": "audio/pcm", "rate": RATE}, "voice": params.voice}},
        "usage": usage,
        "metadata": dict(params.metadata) if params.metadata is not None else None,
    }
