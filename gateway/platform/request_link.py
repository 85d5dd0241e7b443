"""What the gateway's own server tells the application about one request, beyond ASGI.

ASGI says a client left only as an `http.disconnect` message waiting in the request's
queue, so an application that must stop the moment its client leaves (the fast path: a
client that goes cancels its upstream call at once) had to keep a task per request
reading that queue. Our server's connections (`gateway.platform.connections`) spawn each
request's application task through `LinkedTaskGroup`, which puts a `RequestLink` in the
scope's extensions (`link_of(scope)`):

- `watch(scope)`: the cancel scope to cancel the moment the server hands the request an
  `http.disconnect`, with no task of its own (the connection's reader, which sees the
  close, cancels it). `watch(None)` stops watching: after the answer's last message
  (Hypercorn hands every finished request a disconnect too), or when the block ends.
- `take_queued()`: a message already waiting in the request's queue (the request body,
  which usually arrives with its head), taken without a scheduler round trip.
- `join_next_write()`: the next write waits for the one after it and leaves with it:
  an answer's head with the body that follows (an answer sent whole, or a stream's head
  with the frames already in hand), a stream's last frames with the body's end (one
  system call and one lock instead of two).

The connection's reader puts a request's messages in its queue without a checkpoint
while the queue has room (`max_app_queue_size`; a full queue is still waited on): a body
that came with its head, as a chat request's usually does, is queued whole (the body and
its end) before the request's task first runs, so the task takes it with `take_queued`
and never parks. With a checkpoint per message the task ran in between, found the body's
end not yet queued and waited for it: a scheduler round trip and the upload floor's wait
per request. The reader still checkpoints at its next read of the socket.

An application served by another server finds no link and does what ASGI allows (the
fast path then watches with a task, as before).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio.task_group import TaskGroup, _handle
from hypercorn.typing import AppWrapper, ASGIReceiveEvent, ASGISendEvent, Scope

LINK = "gateway.request_link"
Message = dict[str, Any]


class RequestLink:
    """One request's link to its connection (see the module docstring)."""

    __slots__ = ("_join_next_write", "_queue", "_watched", "gone")

    def __init__(
        self,
        queue: trio.MemoryReceiveChannel[ASGIReceiveEvent],
        join_next_write: Callable[[], None] = lambda: None,
    ) -> None:
        self._queue = queue
        self._join_next_write = join_next_write
        self._watched: trio.CancelScope | None = None
        self.gone = False  # the server handed the request a disconnect

    def join_next_write(self) -> None:
        """The next write waits for the one after it and leaves with it."""
        self._join_next_write()

    def watch(self, scope: trio.CancelScope | None) -> None:
        """Cancel `scope` when the client leaves (at once if it already has); None stops."""
        self._watched = scope
        if scope is not None and self.gone:
            scope.cancel()

    def disconnected(self) -> None:
        self.gone = True
        if self._watched is not None:
            self._watched.cancel()

    def take_queued(self) -> Message | None:
        """The next message if one is waiting, else None. Not a checkpoint: the caller
        reaches one soon after (reading the rest of the body, or the upstream call), so a
        cancellation still lands (`tests/gateway/test_request_link.py`)."""
        try:
            return dict(self._queue.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            return None


def link_of(scope: Message) -> RequestLink | None:
    """The request's link, when our server serves it."""
    extensions = scope.get("extensions")
    link = extensions.get(LINK) if extensions else None
    return link if isinstance(link, RequestLink) else None


def without_link(scope: Message) -> Message:
    """`scope` as another server would give it: no link. For a wrapper that must see
    every message of the body through `receive` (the debug setting that logs bodies):
    `take_queued` hands a body that came with its head past any wrapped `receive`."""
    extensions = scope.get("extensions")
    if not extensions or LINK not in extensions:
        return scope
    rest = {name: value for name, value in extensions.items() if name != LINK}
    return {**scope, "extensions": rest}


class LinkedTaskGroup(TaskGroup):
    """Hypercorn's task group of one connection, spawning each request with a
    `RequestLink` (its `spawn_app`, checked against Hypercorn 0.18, plus the link);
    `join_next_write` is the connection's, for the links."""

    def __init__(self, join_next_write: Callable[[], None] = lambda: None) -> None:
        super().__init__()
        self._join_next_write = join_next_write

    async def spawn_app(
        self,
        app: AppWrapper,
        config: Config,
        scope: Scope,
        send: Callable[[ASGISendEvent | None], Awaitable[None]],
    ) -> Callable[[ASGIReceiveEvent], Awaitable[None]]:
        # Not `open_memory_channel[ASGIReceiveEvent](...)`: subscripting builds a generic
        # alias through typing's cache on every request (about a third of the call).
        channel: tuple[
            trio.MemorySendChannel[ASGIReceiveEvent], trio.MemoryReceiveChannel[ASGIReceiveEvent]
        ] = trio.open_memory_channel(config.max_app_queue_size)
        put, queue = channel
        link = RequestLink(queue, self._join_next_write)
        cast(dict[str, Any], scope)["extensions"][LINK] = link
        assert self._nursery is not None
        self._nursery.start_soon(
            _handle,
            app,
            config,
            scope,
            queue.receive,
            send,
            trio.to_thread.run_sync,
            trio.from_thread.run,
        )

        async def app_put(message: ASGIReceiveEvent) -> None:
            if message["type"] == "http.disconnect":
                link.disconnected()
            try:  # no checkpoint while the queue has room (the module docstring)
                put.send_nowait(message)
            except trio.WouldBlock:
                await put.send(message)

        return app_put
