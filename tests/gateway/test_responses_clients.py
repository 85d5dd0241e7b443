"""The clients teams use with the Responses API, pointed at the gateway and nothing else
changed: the `openai` package's WebSocket mode, the `openai-agents` SDK's default agent,
LangChain's `ChatOpenAI(use_responses_api=True)`.

They run in a thread of their own (the agents SDK and LangChain on asyncio, the WebSocket
client blocking), against the gateway serving in the test's trio loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def sync_client(gateway: RunningGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=ADMIN_KEY, max_retries=0)


def turn(connection: Any, **create: Any) -> list[Any]:
    """Send one `response.create` and read its events up to the end of the turn."""
    connection.response.create(**create)
    events = []
    for event in connection:
        events.append(event)
        if event.type in ("response.completed", "response.failed", "error"):
            return events
    raise AssertionError("the connection closed mid-turn")


def websocket_session(gateway: RunningGateway) -> dict[str, Any]:
    with sync_client(gateway) as client, client.responses.connect() as connection:
        first = turn(connection, model="gpt-4o-mini", input="My name is Ada.", store=False)
        # not stored, yet continued: the connection remembers its last response
        second = turn(
            connection,
            model="gpt-4o-mini",
            input=[{"role": "user", "content": "What is my name?"}],
            previous_response_id=first[-1].response.id,
            store=False,
        )
        bad = turn(connection, model="gpt-4o-mini", input="Hi", tools=[{"type": "web_search"}])
        third = turn(connection, model="claude-haiku-4-5", input="Still there?")
        alone = client.responses.create(model="gpt-4o-mini", input="What is my name?")
    return {"first": first, "second": second, "bad": bad, "third": third, "alone": alone}


async def test_the_websocket_mode_serves_turns_one_after_another(gateway: RunningGateway) -> None:
    with trio.fail_after(30):
        seen = await trio.to_thread.run_sync(websocket_session, gateway)
    first, second, bad, third = seen["first"], seen["second"], seen["bad"], seen["third"]
    kinds = [event.type for event in first]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [event.sequence_number for event in first] == list(range(len(first)))
    deltas = "".join(e.delta for e in first if e.type == "response.output_text.delta")
    assert deltas == first[-1].response.output_text
    continued = second[-1].response
    assert continued.previous_response_id == first[-1].response.id
    # the upstream read the first turn too
    assert continued.usage.input_tokens > seen["alone"].usage.input_tokens
    assert [event.type for event in bad] == ["error"]
    assert bad[0].status == 400 and bad[0].error.param == "tools[0].type"
    assert third[-1].type == "response.completed"  # the connection went on after the error
    assert third[-1].response.model == "claude-haiku-4-5"


def websocket_refused(gateway: RunningGateway) -> Any:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key="gw_bad_0000000000000000000")
    with client, client.responses.connect() as connection:
        return connection.recv()


async def test_a_websocket_without_a_valid_key_is_told_why(gateway: RunningGateway) -> None:
    with trio.fail_after(30):
        event = await trio.to_thread.run_sync(websocket_refused, gateway)
    assert event.type == "error" and event.status == 401
    assert event.error.code == "invalid_api_key"


def run_agent(gateway: RunningGateway) -> tuple[Any, list[str]]:
    from agents import Agent, Runner, function_tool, set_default_openai_client, set_tracing_disabled

    called: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return f"Sunny in {city}, 21 C"

    async def main() -> Any:
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=ADMIN_KEY)
        set_default_openai_client(client)
        set_tracing_disabled(True)
        agent = Agent(
            name="Weather",
            instructions="Answer with the tool.",
            tools=[get_weather],
            model="gpt-4o-mini",
        )
        result = await Runner.run(agent, "What is the weather in Paris?")
        await client.close()
        return result

    return asyncio.run(main()), called


async def test_the_agents_sdk_runs_a_tool_using_agent_to_completion(
    gateway: RunningGateway,
) -> None:
    with trio.fail_after(60):
        result, called = await trio.to_thread.run_sync(run_agent, gateway)
    assert len(called) == 1  # the model asked for the tool once, the SDK ran it
    assert isinstance(result.final_output, str) and result.final_output
    kinds = [item.type for item in result.new_items]
    assert kinds == ["tool_call_item", "tool_call_output_item", "message_output_item"]


def langchain_answers(gateway: RunningGateway) -> tuple[Any, Any]:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        model="gpt-4o-mini",
        base_url=gateway.url + "/v1",
        api_key=ADMIN_KEY,  # type: ignore[arg-type]
        use_responses_api=True,
        max_retries=0,
    )
    plain = llm.invoke("Hello there")
    with_tools = llm.bind_tools([WEATHER]).invoke("What is the weather in Rome?")
    return plain, with_tools


async def test_langchain_chat_openai_on_the_responses_api(gateway: RunningGateway) -> None:
    with trio.fail_after(60):
        plain, with_tools = await trio.to_thread.run_sync(langchain_answers, gateway)
    assert plain.text and plain.response_metadata["id"].startswith("resp_")
    assert plain.usage_metadata["output_tokens"] > 0
    [call] = with_tools.tool_calls
    assert call["name"] == "get_weather" and isinstance(call["args"], dict)
    assert json.dumps(call["args"])


async def test_a_dropped_websocket_closes_the_turns_upstream_at_once(
    gateway: RunningGateway,
) -> None:
    """The turn runs in the connection's handler: a client that goes away mid-turn
    cancels it, and the upstream connection is dropped right away."""
    from trio_websocket import open_websocket_url

    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="gpt-4o-mini", stop_after_chunks=2, stall_ms=60_000, remaining=1))
    before = sim.stats.client_disconnects
    url = gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = [("Authorization", f"Bearer {ADMIN_KEY}")]
    create = {"type": "response.create", "model": "gpt-4o-mini", "input": "Tell me a story"}
    with trio.fail_after(10):
        async with open_websocket_url(url, extra_headers=headers) as socket:
            await socket.send_message(json.dumps(create))
            first = json.loads(await socket.get_message())
            assert first["type"] == "response.created"
        while sim.stats.client_disconnects == before:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert sim.stats.client_disconnects == before + 1
