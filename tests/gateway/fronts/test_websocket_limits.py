"""The WebSocket mode's own rules, with a fake socket and trio's virtual clock."""

from __future__ import annotations

import json
from typing import Any, cast

import trio
import trio.testing

from gateway.responses.websocket import MAX_CONNECTION_S, serve_socket


class Script:
    """A client: each message after its delay; the connection ends after the last."""

    def __init__(self, *messages: tuple[float, Any]) -> None:
        self._messages = list(messages)
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> str:
        if not self._messages:
            await trio.sleep_forever()
        delay, message = self._messages.pop(0)
        await trio.sleep(delay)
        return message if isinstance(message, str) else json.dumps(message)

    async def send(self, data: str) -> None:
        self.sent.append(json.loads(data))


async def serve(script: Script) -> None:
    """Serve until the script is done (its last message answered)."""
    with trio.move_on_after(MAX_CONNECTION_S * 2):
        await serve_socket(cast(Any, None), cast(Any, None), {}, script)


async def test_a_turn_asked_after_sixty_minutes_closes_the_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    create = {"type": "response.create", "model": "gpt-4o-mini", "input": "Hi"}
    script = Script((MAX_CONNECTION_S, create))
    await serve(script)
    assert [event["error"]["code"] for event in script.sent] == [
        "websocket_connection_limit_reached"
    ]
    assert trio.current_time() == MAX_CONNECTION_S  # it returned at once: the socket closes


async def test_bad_events_are_answered_and_the_connection_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script = Script((1, {"type": "response.cancel"}), (1, "not json"), (1, [1, 2]))
    await serve(script)
    assert [(e["status"], e["error"]["code"]) for e in script.sent] == [
        (400, "invalid_request"),
        (400, "invalid_json"),
        (400, "invalid_request"),
    ]
    assert script.sent[0]["error"]["param"] == "type"
