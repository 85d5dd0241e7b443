"""The Responses API as a dialect in front of chat (`gateway.chat.dialect`).

One object per request: `parse` reads the body (with the conversation of the previous
response it continues) and keeps the request, which the answer repeats; `answer` and
`frames` render the canonical answer as a response, whole or as events. What was
answered last (`final`) is what the store keeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from gateway.chat.dialect import Parsed
from gateway.chat.input import parse_chat_body
from gateway.chat.trip import Trip
from gateway.responses.events import ResponseEvents
from gateway.responses.input import ResponsesRequest, parse_responses_body
from gateway.responses.render import answered
from gateway.upstream.accounting import Accounting
from providers.types import ChatResult


class ResponsesDialect:
    """`POST /v1/responses` (and a WebSocket turn, `sse` False: JSON lines)."""

    def __init__(
        self,
        history: Sequence[Mapping[str, Any]],
        *,
        sse: bool = True,
        on_final: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        self._history, self._sse, self._on_final = history, sse, on_final
        self._request: ResponsesRequest | None = None
        self._events: ResponseEvents | None = None
        self._whole: dict[str, Any] | None = None

    @property
    def request(self) -> ResponsesRequest:
        assert self._request is not None, "parse() first"
        return self._request

    @property
    def final(self) -> dict[str, Any] | None:
        """The finished response (whole, or at the end of its stream); None before."""
        if self._events is not None:
            return self._events.final
        return self._whole

    def parse(self, body: Any) -> Parsed:
        self._request = parse_responses_body(body, self._history)
        chat = self._request.chat_body
        return Parsed(parse_chat_body(chat), chat)

    def answer(self, trip: Trip, result: ChatResult, accounting: Accounting) -> dict[str, Any]:
        self._whole = answered(self.request, trip, result, accounting)
        return self._whole

    def frames(self, trip: Trip) -> ResponseEvents:
        self._events = ResponseEvents(self.request, trip, sse=self._sse, on_final=self._on_final)
        return self._events
