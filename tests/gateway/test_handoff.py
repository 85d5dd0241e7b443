"""The hand-off of a streamed chat answer, cancelled at every await.

Between planning a streamed answer and its last frame there are many awaits: the key's
admission, the race to a first chunk, entering the body, the response head, each frame.
A client that goes away cancels whichever is running. Whatever that await is, the
upstream stream must be closed and the key's concurrency slot given back by the time the
handler returns, with the garbage collector switched off: no finalizer may do it.

The cancellation is delivered by a trio instrument that counts the handler task's steps
(each step ends at an await) and cancels the request's scope after step n, for every n
until a request completes uncancelled.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncGenerator
from typing import Any

import attrs
import trio
import trio.lowlevel

from gateway.app.server import RunningGateway
from gateway.platform.asgi import FastPath
from gateway.upstream.registry import ConfiguredProvider
from providers.fake import FakeProvider
from providers.types import ChatChunk, ChatRequest, Usage
from tests.gateway.conftest import ADMIN_KEY

BODY = (
    b'{"model": "gpt-4o-mini", "stream": true, "service": {"cache": "skip"},'
    b' "messages": [{"role": "user", "content": "hi"}]}'
)


async def three_words(request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
    for word in ("one ", "two ", "three"):
        await trio.lowlevel.checkpoint()
        yield ChatChunk(content=word)
    yield ChatChunk(finish_reason="stop", usage=Usage(3, 3))


@attrs.define(eq=False)
class CancelAfterSteps(trio.abc.Instrument):
    """Cancels `scope` once `task` has taken `steps` steps."""

    task: trio.lowlevel.Task
    scope: trio.CancelScope
    steps: int
    taken: int = 0

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.taken += 1
            if self.taken == self.steps:
                self.scope.cancel()


def fake_openai(gateway: RunningGateway) -> FakeProvider:
    """Serve the default workspace's `openai` provider from a fake that counts streams."""
    fake = FakeProvider("openai", stream=three_words)
    configured = gateway.state.registry.configured("default")
    entry = configured["openai"]
    assert isinstance(configured, dict)
    configured["openai"] = ConfiguredProvider(entry.record, fake)
    return fake


async def one_request(app: FastPath, sent: list[dict[str, Any]]) -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [
            (b"authorization", f"Bearer {ADMIN_KEY}".encode()),
            (b"content-type", b"application/json"),
        ],
        "client": ("127.0.0.1", 5000),
    }
    messages = [{"type": "http.request", "body": BODY, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await trio.sleep_forever()  # the client says nothing more: it is cancelled
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        await trio.lowlevel.checkpoint()
        sent.append(message)

    await app(scope, receive, send)


async def test_a_cancellation_at_any_await_closes_the_upstream_and_frees_the_slot(
    gateway: RunningGateway,
) -> None:
    state = gateway.state
    fake = fake_openai(gateway)
    app = gateway.http
    assert app is not None
    key = state.keyring.lookup(ADMIN_KEY)
    assert key is not None
    phases: set[str] = set()
    steps = 0
    gc.disable()
    try:
        while True:
            steps += 1
            sent: list[dict[str, Any]] = []
            with trio.CancelScope() as scope:
                instrument = CancelAfterSteps(trio.lowlevel.current_task(), scope, steps)
                trio.lowlevel.add_instrument(instrument)
                try:
                    await one_request(app, sent)
                finally:
                    trio.lowlevel.remove_instrument(instrument)
            assert fake.open_streams == 0, f"upstream left open when cancelled at step {steps}"
            assert state.limits.snapshot(key).inflight == 0, f"slot held after step {steps}"
            if not scope.cancelled_caught:
                break
            phases.add(_phase(sent))
    finally:
        gc.enable()
    assert fake.streams_opened >= 1
    # The cancellations fell before the answer began, after its head, and mid-body.
    assert {"before the head", "after the head", "mid-body"} <= phases
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def _phase(sent: list[dict[str, Any]]) -> str:
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    if not sent:
        return "before the head"
    return "after the head" if not bodies else "mid-body"
