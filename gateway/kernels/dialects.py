"""Another dialect in front of chat: the interface the front doors share with chat.

A dialect (the Responses API, Anthropic's Messages API) reads its own request body into
a chat-completions body, which chat then reads, plans and answers exactly as its own, and
renders the canonical answer back in its own shapes: a whole answer as a JSON object, a
streamed one as its own frames. Everything between (planning, routing rules, fallbacks,
admission and limits, the cache, the engine's race, accounting, energy and carbon, the
usage record) is chat's path, unchanged, so the doors cannot drift apart in what they
do, only in how they say it.

Over core types only: chat implements `ServeChat`, the front doors implement `Dialect`,
and the composition root hands the one to the others when it mounts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting
from providers.types import ChatChunk, ChatResult

Metadata = Callable[[Accounting, Sequence[str]], dict[str, Any]]


@attrs.frozen
class Answered:
    """What a dialect knows of an answer besides its content, once the race is decided:
    the request's id and time, the model that served it (a fallback's when one did), the
    prompt's estimated tokens (a stream's first event states them), and the gateway's
    metadata fields (`service`, `_gateway`) for the answer's accounting and tools."""

    request_id: str
    created: int
    model: str
    prompt_tokens: int
    metadata: Metadata


class Frames(Protocol):
    """The frames of one streamed answer in a dialect, from a state machine of its own.

    The stream body calls `opening` once, `chunk` for each canonical chunk (`text` for
    a plain text delta handed as its text), then either
    `finish` (the upstream ended) or `fail` (it failed after the first chunk); each
    returns the bytes to send (possibly none). `seal` is awaited once, after `finish` or
    `fail` and before their frames are sent: what must be done before the client can see
    the end (the Responses API keeps the response there, so a client that continues it
    at once finds it). A cancelled `seal` (the client left) cancels only what it awaits.
    """

    @property
    def content_type(self) -> str: ...

    def opening(self) -> bytes: ...

    def chunk(self, chunk: ChatChunk) -> bytes: ...

    def text(self, text: str) -> bytes:
        """`chunk(ChatChunk(text))` for a plain text delta of the first choice (a
        `Batched` stream's text piece, most of a stream): a dialect renders it from its
        prepared bytes without the chunk."""
        ...

    def finish(
        self, finish_reason: str, accounting: Accounting, tools_called: Sequence[str]
    ) -> bytes: ...

    def fail(self, error: ApiError) -> bytes: ...

    async def seal(self) -> None: ...


class Dialect(Protocol):
    """How one front door speaks: see the module docstring."""

    @property
    def endpoint(self) -> str:
        """The door among the catalog's endpoints (`responses`, `messages`): a model
        served through other doors only is refused here (`gateway.upstream.endpoints`)."""
        ...

    def chat_body(self, body: Any) -> dict[str, Any]:
        """The chat-completions body the request amounts to; a 400 `ApiError` in the
        dialect's own names for what it cannot express. Routing rules read this body."""
        ...

    def truncation(self) -> int | None:
        """After `chat_body`: None when the conversation must be sent whole; else it may
        lose its oldest turns to fit the routed model, after its first messages this
        many (`gateway.chat.truncation`)."""
        ...

    def answer(self, answered: Answered, result: ChatResult, accounting: Accounting) -> Any:
        """A whole answer's JSON body."""
        ...

    def frames(self, answered: Answered) -> Frames:
        """A fresh state machine for one streamed answer."""
        ...


class ServeChat(Protocol):
    """Chat's path with another dialect in front: an answering context, as chat's own."""

    def __call__(
        self, principal: Principal, body: Any, headers: Mapping[str, str], dialect: Dialect
    ) -> Answering: ...
