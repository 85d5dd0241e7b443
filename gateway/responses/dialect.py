"""The Responses API as a dialect in front of chat (`gateway.kernels.dialects`).

One object per request: `chat_body` reads the body (with the conversation of the previous
response it continues) and keeps the request, which the answer repeats; `answer` and
`frames` render the canonical answer as a response, whole or as events. What was
answered last (`final`) is what the store keeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from gateway.kernels.dialects import Answered
from gateway.responses.events import ResponseEvents
from gateway.responses.input import ResponsesRequest, parse_responses_body
from gateway.responses.render import whole
from gateway.upstream.accounting import Accounting
from providers.types import ChatResult


class ResponsesDialect:
    """`POST /v1/responses` (and a WebSocket turn, `sse` False: JSON lines)."""

    endpoint = "responses"

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
        assert self._request is not None, "chat_body() first"
        return self._request

    @property
    def final(self) -> dict[str, Any] | None:
        """The finished response (whole, or at the end of its stream); None before."""
        if self._events is not None:
            return self._events.final
        return self._whole

    def chat_body(self, body: Any) -> dict[str, Any]:
        self._request = parse_responses_body(body, self._history)
        return self._request.chat_body

    def truncation(self) -> int | None:
        return self.request.kept_on_truncation

    def answer(self, answered: Answered, result: ChatResult, accounting: Accounting) -> Any:
        self._whole = whole(self.request, answered, result, accounting)
        return self._whole

    def frames(self, answered: Answered) -> ResponseEvents:
        self._events = ResponseEvents(
            self.request, answered, sse=self._sse, on_final=self._on_final
        )
        return self._events
