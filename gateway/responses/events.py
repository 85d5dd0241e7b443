"""A streamed response as the Responses API's server-sent events (pure; a `Frames`).

The documented sequence, each event with its `sequence_number` from 0:

    response.created, response.in_progress                      (the response, in progress)
    per message:  response.output_item.added, response.content_part.added,
                  response.output_text.delta ..., response.output_text.done,
                  response.content_part.done, response.output_item.done
    per call:     response.output_item.added,
                  response.function_call_arguments.delta ..., ...arguments.done,
                  response.output_item.done
    response.completed (or response.incomplete)                 (the finished response)
    or, when the upstream fails after the first chunk: response.failed

Which item opens and closes when is `gateway.kernels.blocks`' table; this module only says
each step in this API's words, and `gateway.responses.frames` holds each event's bytes,
prepared once, with the values that change spliced in. The finished response object
(`final`) is kept for the store. The same events travel over the WebSocket mode, one
JSON message each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson

from gateway.kernels.blocks import Block, BlockEvent, BlockSequencer, Step
from gateway.kernels.dialects import Answered
from gateway.platform.errors import ApiError
from gateway.platform.jsonio import dumps
from gateway.responses.frames import (
    LINES,
    SSE,
    DeltaTemplate,
    framed,
    item_deltas,
    json_string,
    message_item_json,
    text_part_json,
)
from gateway.responses.input import ResponsesRequest
from gateway.responses.items import new_item_id
from gateway.responses.render import (
    function_call_item,
    item_status,
    message_item,
    response_object,
    status_of,
    token_logprobs,
)
from gateway.upstream.accounting import Accounting
from providers.types import ChatChunk


class ResponseEvents:
    """The events of one streamed response; see the module docstring.

    `sse` False frames each event as one line of JSON instead of an SSE event: the
    WebSocket mode sends each line as one message.
    """

    content_type = "text/event-stream"

    def __init__(
        self,
        request: ResponsesRequest,
        answered: Answered,
        *,
        sse: bool = True,
        on_final: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self._request, self._answered = request, answered
        self._sse, self._on_final = sse, on_final
        self._formats = SSE if sse else LINES
        self._blocks = BlockSequencer()
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._rendered: list[orjson.Fragment] = []  # `_output`'s items as JSON
        self._item: dict[str, Any] = {}
        self._item_id = b""  # the open item's id, as bytes for the formats
        self._pieces: list[str] = []
        self._logprobs: list[dict[str, Any]] = []  # the open message's (when asked)
        self._pending: list[dict[str, Any]] = []  # the next delta's
        self._delta: DeltaTemplate | None = None  # the open item's deltas, pre-rendered
        self._closing_status = "completed"
        self.final: dict[str, Any] | None = None

    # -- Frames ----------------------------------------------------------------------------

    def opening(self) -> bytes:
        snapshot = dumps(self._response("in_progress"))  # rendered once, sent twice
        self._sequence = 2
        formats = self._formats
        return formats.created % (0, snapshot) + formats.in_progress % (1, snapshot)

    def chunk(self, chunk: ChatChunk) -> bytes:
        if chunk.logprobs:  # asked for: this chunk's text delta carries them
            self._pending = token_logprobs(chunk.logprobs)
        text = self._blocks.continued_text(chunk)
        if text:  # most chunks: a delta of the open message, from its prepared bytes
            self._pieces.append(text)
            if self._pending or self._delta is None:
                return self._emit_delta(text)
            self._sequence += 1
            return self._delta.render(self._sequence - 1, text)
        events = self._blocks.feed(chunk)
        if len(events) == 1:  # most chunks: one delta
            return self._step(events[0])
        return b"".join([self._step(event) for event in events])

    def text(self, text: str) -> bytes:
        delta = self._delta
        if text and delta is not None and not self._pending and self._blocks.state is Block.TEXT:
            self._pieces.append(text)  # a delta of the open message, as `chunk` does
            self._sequence += 1
            return delta.render(self._sequence - 1, text)
        return self.chunk(ChatChunk(text))

    def finish(
        self, finish_reason: str, accounting: Accounting, tools_called: Sequence[str]
    ) -> bytes:
        status, incomplete = status_of(finish_reason)
        self._closing_status = item_status(status)
        frames = b"".join([self._step(event) for event in self._blocks.close()])
        self.final = self._response(status, accounting=accounting, incomplete=incomplete)
        formats = self._formats
        done = formats.completed if status == "completed" else formats.incomplete
        return frames + done % (self._next(), self._final_json())

    def fail(self, error: ApiError) -> bytes:
        """The upstream failed after the first chunk: the response failed, with what was
        finished of its output."""
        self.final = self._response("failed", error=error)
        return self._formats.failed % (self._next(), self._final_json())

    async def seal(self) -> None:
        """Hand the finished response to `on_final` (the store) before its last event
        goes out."""
        if self.final is not None and self._on_final is not None:
            await self._on_final(self.final)

    # -- steps -----------------------------------------------------------------------------

    def _step(self, event: BlockEvent) -> bytes:
        step = event.step
        if step is Step.OPEN_TEXT:
            return self._open_text()
        if step is Step.TEXT:
            self._pieces.append(event.text)
            return self._emit_delta(event.text)
        if step is Step.CLOSE_TEXT:
            return self._close_text()
        if step is Step.OPEN_CALL:
            assert event.call is not None
            call_id = event.call.id or new_item_id("call")
            item = function_call_item(
                new_item_id("fc"), call_id, event.call.name or "", "", "in_progress"
            )
            return self._open_call(item)
        if step is Step.ARGS:
            assert event.call is not None
            return self._arguments(event.call.arguments)
        return self._close_call()

    def _open(self, item: dict[str, Any], rendered: bytes) -> bytes:
        self._item, self._item_id, self._pieces = item, item["id"].encode(), []
        return self._formats.item_added % (self._next(), self._index(), rendered)

    def _open_text(self) -> bytes:
        item_id = new_item_id("msg")
        rendered = message_item_json(item_id.encode(), b"in_progress", None)
        frames = self._open(message_item(item_id, None, "in_progress"), rendered)
        self._delta = item_deltas(self._formats.text_delta, self._item_id, self._index())
        return frames + self._formats.part_added % (self._next(), self._item_id, self._index())

    def _close_text(self) -> bytes:
        """output_text.done, content_part.done, output_item.done: the text rendered once."""
        text, logprobs = "".join(self._pieces), self._logprobs
        text_json = json_string(text)
        logprobs_json = dumps(logprobs) if logprobs else b"[]"
        formats, item_id, index = self._formats, self._item_id, self._index()
        frames = formats.text_done % (self._next(), item_id, index, text_json, logprobs_json)
        part = text_part_json(text_json, logprobs_json)
        frames += formats.part_done % (self._next(), item_id, index, part)
        status = self._closing_status
        item = message_item(self._item["id"], text, status, logprobs)
        self._logprobs = []
        return frames + self._done(item, message_item_json(item_id, status.encode(), part))

    def _open_call(self, item: dict[str, Any]) -> bytes:
        frames = self._open(item, dumps(item))
        self._delta = item_deltas(self._formats.arguments_delta, self._item_id, self._index())
        return frames

    def _arguments(self, delta: str) -> bytes:
        if not delta:
            return b""
        self._pieces.append(delta)
        return self._emit_delta(delta)

    def _close_call(self) -> bytes:
        arguments = "".join(self._pieces)
        item = self._item | {"arguments": arguments, "status": self._closing_status}
        frames = self._formats.arguments_done % (
            self._next(),
            self._item_id,
            self._index(),
            json_string(item["name"]),
            json_string(arguments),
        )
        return frames + self._done(item, dumps(item))

    def _done(self, item: dict[str, Any], rendered: bytes) -> bytes:
        frames = self._formats.item_done % (self._next(), self._index(), rendered)
        self._output.append(item)
        self._rendered.append(orjson.Fragment(rendered))
        self._item, self._delta = {}, None
        return frames

    # -- helpers ---------------------------------------------------------------------------

    def _next(self) -> int:
        """The next event's sequence number."""
        self._sequence += 1
        return self._sequence - 1

    def _index(self) -> int:
        """The open item's place in `output` (the finished ones come before it)."""
        return len(self._output)

    def _response(
        self,
        status: str,
        *,
        accounting: Accounting | None = None,
        incomplete: dict[str, str] | None = None,
        error: ApiError | None = None,
    ) -> dict[str, Any]:
        return response_object(
            self._request,
            self._answered,
            status=status,
            output=self._output,
            accounting=accounting,
            incomplete=incomplete,
            error=error,
        )

    def _final_json(self) -> bytes:
        """`final` rendered, its output items from the bytes their events sent."""
        assert self.final is not None
        return dumps({**self.final, "output": self._rendered})

    def _emit_delta(self, delta: str) -> bytes:
        """A delta of the open item, from its template (the same bytes as the dict's)."""
        assert self._delta is not None, "an item is open"
        if self._pending and self._item["type"] == "message":  # log probabilities asked
            logprobs, self._pending = self._pending, []
            self._logprobs.extend(logprobs)
            event = {
                "type": "response.output_text.delta",
                "sequence_number": self._next(),
                "item_id": self._item["id"],
                "output_index": self._index(),
                "content_index": 0,
                "delta": delta,
                "logprobs": logprobs,
            }
            return framed(event["type"], dumps(event), sse=self._sse)
        self._sequence += 1
        return self._delta.render(self._sequence - 1, delta)
