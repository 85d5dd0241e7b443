"""The OpenAI simulator's Realtime API, held to the official `openai` client: the same
conversation the gateway's own `/v1/realtime` is tested with (two spoken turns, a
function call, a barge-in and a truncate), straight against the simulator."""

from __future__ import annotations

import httpx

from gateway.app.server import RunningGateway
from tests.gateway.pipelines.test_pipelines_api import sim_of
from tests.gateway.realtime.test_openai_realtime import (
    assert_the_whole_conversation,
    scripted_conversation,
)


async def test_the_openai_client_holds_a_conversation_with_the_simulator(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    events = await scripted_conversation(sim, http, sim.base_url("openai") + "/v1")
    assert_the_whole_conversation(events)
