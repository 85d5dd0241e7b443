"""The fast path's request link (`gateway.platform.request_link`): on the gateway's own
server a client that leaves cancels its request through the connection, with no watcher
task, and the body already queued is taken without a checkpoint. Cancellation must still
land: a departure while the upstream is silent closes the upstream request at once, and a
departure before the answer began is recorded as the client's (499)."""

from __future__ import annotations

from typing import Any, cast

import httpx
import trio
import trio.testing
from hypercorn.config import Config

from gateway.app.server import RunningGateway
from gateway.platform.request_link import LinkedTaskGroup, RequestLink, link_of
from providers.sim.core import Fault

HELLO: Any = [{"role": "user", "content": "Hello there"}]


async def _left_while_upstream_silent(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=60_000, remaining=1))
    before = sim.stats.client_disconnects
    body = {"model": "gpt-4o-mini", "messages": HELLO}
    with trio.move_on_after(0.5):  # the client gives up (its connection closes)
        await http.post("/v1/chat/completions", json=body)
    with trio.fail_after(5):  # the gateway drops its upstream request right away
        while sim.stats.client_disconnects == before:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert sim.stats.client_disconnects == before + 1


async def test_a_client_leaving_a_plain_request_closes_the_upstream_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await _left_while_upstream_silent(gateway, http)


async def test_the_departure_is_recorded_as_the_clients(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await _left_while_upstream_silent(gateway, http)
    await gateway.state.usage.flush()
    last = "SELECT status, error_code FROM usage_records ORDER BY rowid DESC LIMIT 1"
    row = await gateway.state.db.run(lambda d: d.execute(last).fetchone())
    assert tuple(row) == (499, "client_disconnected")


async def test_the_connection_serves_the_next_request_after_a_departure(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await _left_while_upstream_silent(gateway, http)
    body = {"model": "gpt-4o-mini", "messages": HELLO}
    with trio.fail_after(10):
        answer = await http.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200


async def test_a_link_cancels_what_it_watches_when_the_client_is_already_gone() -> None:
    send, receive = trio.open_memory_channel[Any](4)
    link = RequestLink(receive)
    await send.send({"type": "http.request", "body": b"{}", "more_body": False})
    assert link.take_queued() == {"type": "http.request", "body": b"{}", "more_body": False}
    assert link.take_queued() is None  # nothing waiting: no wait either
    link.disconnected()
    with trio.CancelScope() as scope:
        link.watch(scope)
        await trio.sleep(1)
    assert scope.cancelled_caught
    assert link_of({"extensions": {}}) is None


async def _unused_send(message: object) -> None:
    """The connection's send, unused by these apps."""


async def test_a_body_that_came_with_its_head_is_queued_whole_before_its_task_runs() -> None:
    """The connection's reader puts the body and its end without a checkpoint, so the
    request's task, when it first runs, takes the whole body from the queue with no wait
    (with a checkpoint per message it ran in between and parked for the body's end)."""
    taken: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any, *spawners: Any) -> None:
        link = link_of(scope)
        assert link is not None
        while (message := link.take_queued()) is not None:
            taken.append(message)

    async with LinkedTaskGroup() as group:
        put = await group.spawn_app(app, Config(), cast(Any, {"extensions": {}}), _unused_send)
        with trio.testing.assert_no_checkpoints():
            await put({"type": "http.request", "body": b"{}", "more_body": True})
            await put({"type": "http.request", "body": b"", "more_body": False})
    assert [(m["body"], m["more_body"]) for m in taken] == [(b"{}", True), (b"", False)]


async def test_a_full_queue_still_holds_the_reader_back() -> None:
    """Backpressure stays: past `max_app_queue_size` messages the reader waits (a
    checkpoint) until the request's task takes one."""
    config = Config()
    config.max_app_queue_size = 1
    released = trio.Event()

    async def app(scope: Any, receive: Any, send: Any, *spawners: Any) -> None:
        await released.wait()
        await receive()

    async with LinkedTaskGroup() as group:
        put = await group.spawn_app(app, config, cast(Any, {"extensions": {}}), _unused_send)
        await put({"type": "http.request", "body": b"{", "more_body": True})
        released.set()
        with trio.testing.assert_checkpoints():
            await put({"type": "http.request", "body": b"}", "more_body": False})
