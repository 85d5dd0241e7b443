"""Background responses (`background: true`) through the official `openai` client: the
create answered at once, polled to its end, cancelled with its upstream call, streamed
and resumed with `starting_after`, the limits, and a restart.

One virtual clock runs the gateway, the simulators and the client (as in
tests/gateway/pipelines/test_sim_times.py): it jumps to the next deadline once the loop
has been idle for `IDLE_S` of real time, so the simulator's 60-second turns cost no real
time and a cancelled one is seen cancelled long before it would have answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import openai
import pytest
import trio
import trio.testing

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.responses.background_runs import refusal
from providers.sim.core import Fault
from providers.sim.server import SimServer
from tests.gateway.conftest import ADMIN_KEY, gateway_settings

IDLE_S = 0.5  # real seconds: ten times what a thread step takes on a loaded machine
SLOW = 60_000  # ms: a turn the simulator answers only after a virtual minute


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=IDLE_S)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return gateway_settings(
        tmp_path,
        usage_writer="thread",
        background_responses_max=2,
        background_responses_per_workspace=1,
    )


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def until(condition: Callable[[], bool]) -> None:
    with trio.fail_after(30):  # virtual
        while not condition():  # noqa: ASYNC110 (counters of the simulator, no event)
            await trio.sleep(0.01)


async def status_becomes(client: openai.AsyncOpenAI, response_id: str, *statuses: str) -> Any:
    with trio.fail_after(30):  # virtual
        while True:
            response = await client.responses.retrieve(response_id)
            if response.status in statuses:
                return response
            await trio.sleep(0.05)


async def test_a_background_response_is_queued_then_completes(
    client: openai.AsyncOpenAI,
) -> None:
    raw = await client.responses.with_raw_response.create(
        model="gpt-4o-mini", input="Write a haiku", background=True
    )
    response = raw.parse()
    assert response.status == "queued" and response.background is True
    assert response.output == [] and response.usage is None
    assert response.id == "resp_" + raw.headers["x-request-id"].replace("-", "")
    done = await status_becomes(client, response.id, "completed", "failed")
    assert done.status == "completed" and done.background is True
    assert done.output_text and done.usage is not None and done.usage.output_tokens > 0
    assert done.created_at == response.created_at
    assert (done.model_extra or {})["service"]["cost"]["total"] > 0  # accounted as any
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.cancel(response.id)  # finished: nothing to cancel
    assert caught.value.code == "response_not_cancellable"


async def test_cancelling_a_running_response_cancels_its_upstream_call(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=SLOW, remaining=1))
    started = trio.current_time()
    response = await client.responses.create(
        model="gpt-4o-mini", input="Take your time", background=True
    )
    await until(lambda: sim.stats.open_requests == 1)
    assert (await client.responses.retrieve(response.id)).status == "in_progress"
    before = sim.stats.client_disconnects
    cancelled = await client.responses.cancel(response.id)
    assert cancelled.status == "cancelled" and cancelled.id == response.id
    await until(lambda: sim.stats.open_requests == 0)
    assert sim.stats.client_disconnects == before + 1  # the upstream call was dropped
    assert trio.current_time() - started < 1  # not the simulator's minute
    assert (await client.responses.retrieve(response.id)).status == "cancelled"
    again = await client.responses.cancel(response.id)  # idempotent
    assert again.status == "cancelled"


async def test_a_failing_turn_leaves_a_failed_response(client: openai.AsyncOpenAI) -> None:
    response = await client.responses.create(model="no-such-model", input="Hello", background=True)
    assert response.status == "queued"
    failed = await status_becomes(client, response.id, "failed", "completed")
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.code == "model_not_found"


async def test_a_running_response_is_not_continued_and_deleting_it_cancels_it(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=SLOW, remaining=1))
    response = await client.responses.create(model="gpt-4o-mini", input="Hi", background=True)
    await until(lambda: sim.stats.open_requests == 1)
    with pytest.raises(openai.BadRequestError) as early:  # nothing to continue yet
        await client.responses.create(
            model="gpt-4o-mini", input="And then?", previous_response_id=response.id
        )
    assert early.value.param == "previous_response_id"
    await client.responses.delete(response.id)  # a 200 (the client raises otherwise)
    await until(lambda: sim.stats.open_requests == 0)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(response.id)


async def read_until_delta(stream: Any, deltas: int) -> list[Any]:
    """The stream's events up to its `deltas`-th text delta, then the client leaves."""
    events: list[Any] = []
    async for event in stream:
        events.append(event)
        if sum(e.type == "response.output_text.delta" for e in events) == deltas:
            break
    await stream.close()
    return events


async def test_a_streamed_background_response_resumes_after_its_client_left(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    sim = sim_of(gateway)
    sim.config = attrs.evolve(sim.config, tokens_per_second=10)  # 30 tokens: 3 virtual s
    stream = await client.responses.create(
        model="gpt-4o-mini",
        input="Tell me a story",
        max_output_tokens=30,
        background=True,
        stream=True,
    )
    first = await read_until_delta(stream, 3)
    opening = [event.type for event in first[:3]]
    assert opening == ["response.created", "response.queued", "response.in_progress"]
    assert first[0].response.status == "queued" and first[0].response.background is True
    response_id = first[0].response.id
    # the client left: the response goes on, and its events are read again from there
    assert (await client.responses.retrieve(response_id)).status == "in_progress"
    after = first[-1].sequence_number
    resumed = await client.responses.retrieve(response_id, stream=True, starting_after=after)
    rest = [event async for event in resumed]
    events = first + rest
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert rest[-1].type == "response.incomplete"  # 30 tokens was not the whole story
    final = rest[-1].response
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == final.output_text and final.usage is not None and final.usage.output_tokens == 30
    # from the start, once it has finished: the same events
    again = [event async for event in await client.responses.retrieve(response_id, stream=True)]
    assert [event.sequence_number for event in again] == list(range(len(events)))
    stored = await client.responses.retrieve(response_id)
    assert stored.status == "incomplete" and stored.output_text == text


async def test_only_a_streamed_background_response_streams_again(
    client: openai.AsyncOpenAI,
) -> None:
    plain = await client.responses.create(model="gpt-4o-mini", input="Hi")
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.retrieve(plain.id, stream=True)
    assert caught.value.param == "stream"
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve("resp_nothing", stream=True)


async def other_workspace(http: httpx.AsyncClient, gateway: RunningGateway, name: str) -> str:
    workspace = (await http.post("/v1/management/workspaces", json={"name": name})).json()
    created = await http.post(
        "/v1/management/api-keys", json={"name": "k"}, headers={"x-workspace-id": workspace["id"]}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


async def test_past_its_workspace_limit_a_background_response_is_a_429(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    sim_of(gateway).faults.add(Fault(model="gpt-4o-mini", delay_ms=SLOW))
    create = partial(client.responses.create, model="gpt-4o-mini", input="Hi", background=True)
    running = await create()
    with pytest.raises(openai.RateLimitError) as caught:  # one a workspace
        await create()
    assert caught.value.code == "concurrent_limit_exceeded"
    body: Any = caught.value.body
    assert (body["limit"], body["current"]) == (1, 1)
    key = await other_workspace(http, gateway, "b")
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=key, max_retries=0
    ) as other:
        with pytest.raises(openai.NotFoundError):  # another workspace's run is unknown
            await other.responses.retrieve(running.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.cancel(running.id)
        with pytest.raises(openai.NotFoundError):
            await other.responses.retrieve(running.id, stream=True)
    await client.responses.cancel(running.id)  # a slot frees when one ends
    assert (await create()).status == "queued"


async def test_a_restart_marks_the_unfinished_responses_failed(settings: Settings) -> None:
    async with trio.open_nursery() as nursery:
        gateway: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
        sim = sim_of(gateway)
        sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=SLOW))
        async with openai.AsyncOpenAI(
            base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            response = await client.responses.create(
                model="gpt-4o-mini", input="Hi", background=True
            )
            await until(lambda: sim.stats.open_requests == 1)
        nursery.cancel_scope.cancel()  # the process stops mid-turn
    async with trio.open_nursery() as nursery:
        again: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
        async with openai.AsyncOpenAI(
            base_url=again.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            failed = await client.responses.retrieve(response.id)
        nursery.cancel_scope.cancel()
    assert failed.status == "failed"
    assert failed.error is not None and str(failed.error.code) == "gateway_restarted"


@pytest.mark.parametrize(
    ("running", "in_workspace", "refused"),
    [
        (0, 0, None),
        (1, 0, None),
        (1, 1, (1, 1, "workspace")),  # its workspace's one
        (2, 0, (2, 2, "gateway")),  # the gateway's two
        (2, 1, (2, 2, "gateway")),
    ],
)
def test_the_limits_refuse_one_more_run(
    running: int, in_workspace: int, refused: tuple[int, int, str] | None
) -> None:
    error = refusal(running, in_workspace, limit=2, per_workspace=1)
    if refused is None:
        assert error is None
        return
    assert error is not None and (error.status, error.code) == (429, "concurrent_limit_exceeded")
    limit, current, where = refused
    assert (error.extra["limit"], error.extra["current"]) == (limit, current)
    assert where in error.message and error.headers["Retry-After"] == "1"


async def test_the_websocket_mode_refuses_a_background_turn(gateway: RunningGateway) -> None:
    from trio_websocket import open_websocket_url

    url = gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = [(b"Authorization", f"Bearer {ADMIN_KEY}".encode())]
    create = {"type": "response.create", "model": "gpt-4o-mini", "input": "Hi", "background": True}
    with trio.fail_after(30):  # virtual
        async with open_websocket_url(url, extra_headers=headers) as socket:
            await socket.send_message(json.dumps(create))
            event = json.loads(await socket.get_message())
    assert event["type"] == "error" and event["status"] == 400
    assert event["error"]["param"] == "background"
