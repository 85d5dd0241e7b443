"""The OpenAI simulator seen through the official `openai` client, end to end over HTTP."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import httpx
import openai
import pytest
import trio

from providers.sim.core import Fault
from providers.sim.server import SimConfig, SimServer

# The SDK leaves its SSE generators unexhausted after `[DONE]` (it breaks out of them
# without `aclose`), and trio warns when such a generator is collected. That is the
# client's business, not the simulator's: ignore exactly those warnings.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator '(openai|httpx2|httpcore2)\.[\w.]+' was garbage collected"
    ":ResourceWarning"
)

MODEL = "gpt-4o-mini"
DEADLINE = 10
HELLO: Any = [{"role": "user", "content": "Hello there"}]
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
                "details": {
                    "type": "object",
                    "properties": {"hourly": {"type": "boolean"}, "tags": {"type": "array"}},
                },
            },
            "required": ["city", "unit", "days", "details"],
        },
    },
}


def _assert_weather_arguments(arguments: str) -> None:
    parsed = json.loads(arguments)
    assert set(parsed) == {"city", "unit", "days", "details"}
    assert isinstance(parsed["city"], str) and parsed["city"]
    assert parsed["unit"] == "celsius"
    assert parsed["days"] == 42
    assert parsed["details"] == {"hourly": True, "tags": []}


async def test_create(openai_client: openai.AsyncOpenAI, sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        completion = await openai_client.chat.completions.create(model=MODEL, messages=HELLO)
        again = await openai_client.chat.completions.create(model=MODEL, messages=HELLO)
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == MODEL
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == sim.config.default_max_tokens
    assert completion.usage.prompt_tokens == 3  # "Hello there": 11 characters
    assert again.choices[0].message.content == choice.message.content


async def test_max_tokens_cuts_the_answer(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        completion = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, max_tokens=5
        )
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == 5
    assert len((completion.choices[0].message.content or "").split()) == 5


async def test_stream(openai_client: openai.AsyncOpenAI, sim: SimServer) -> None:
    with trio.fail_after(DEADLINE):
        whole = await openai_client.chat.completions.create(model=MODEL, messages=HELLO)
        stream = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            chunks = [chunk async for chunk in stream]
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finish = chunks[-2]
    assert finish.choices[0].finish_reason == "stop"
    assert finish.choices[0].delta.content is None
    usage = chunks[-1]
    assert usage.choices == []
    assert usage.usage is not None
    assert usage.usage.completion_tokens == sim.config.default_max_tokens
    assert sim.stats.streams_started == sim.stats.streams_completed == 1


async def test_stream_ends_with_done(sim: SimServer) -> None:
    body = {"model": MODEL, "messages": HELLO, "stream": True, "max_tokens": 2}
    headers = {"authorization": "Bearer k"}
    url = sim.base_url("openai") + "/v1/chat/completions"
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient() as client:
            response = await client.post(url, json=body, headers=headers)
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["transfer-encoding"] == "chunked"
    events = response.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    assert all(event.startswith("data: ") for event in events[:-1])
    assert "usage" not in json.loads(events[0][6:])  # only with include_usage


async def test_tool_call(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        completion = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, tools=[WEATHER]
        )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    _assert_weather_arguments(call.function.arguments)


async def test_tool_result_gets_a_text_answer(openai_client: openai.AsyncOpenAI) -> None:
    first = await openai_client.chat.completions.create(
        model=MODEL, messages=HELLO, tools=[WEATHER]
    )
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    messages: Any = [
        *HELLO,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    with trio.fail_after(DEADLINE):
        answer = await openai_client.chat.completions.create(
            model=MODEL, messages=messages, tools=[WEATHER]
        )
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content


@pytest.mark.parametrize(
    ("tool_choice", "calls"),
    [
        ("none", False),
        ("required", True),
        ({"type": "function", "function": {"name": "get_weather"}}, True),
    ],
)
async def test_tool_choice(
    openai_client: openai.AsyncOpenAI, tool_choice: Any, calls: bool
) -> None:
    messages: Any = [{"role": "system", "content": "You are terse."}]
    with trio.fail_after(DEADLINE):
        completion = await openai_client.chat.completions.create(
            model=MODEL, messages=messages, tools=[WEATHER], tool_choice=tool_choice
        )
    assert (completion.choices[0].message.tool_calls is not None) is calls


async def test_streamed_tool_call(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        stream = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, tools=[WEATHER], stream=True
        )
        async with stream:
            chunks = [chunk async for chunk in stream]
    opening = chunks[0].choices[0].delta
    assert opening.role == "assistant"
    assert opening.tool_calls is not None
    start = opening.tool_calls[0]
    assert (start.index, start.type) == (0, "function")
    assert start.id is not None and start.id.startswith("call_")
    assert start.function is not None
    assert (start.function.name, start.function.arguments) == ("get_weather", "")
    fragments = []
    for chunk in chunks[1:-1]:
        (piece,) = chunk.choices[0].delta.tool_calls or []
        assert piece.index == 0 and piece.id is None and piece.function is not None
        fragments.append(piece.function.arguments or "")
    assert len(fragments) > 1
    _assert_weather_arguments("".join(fragments))
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (500, openai.InternalServerError, None),
        (503, openai.InternalServerError, "overloaded"),
        (429, openai.RateLimitError, "rate_limit_exceeded"),
        (404, openai.NotFoundError, "model_not_found"),
        (401, openai.AuthenticationError, "invalid_api_key"),
        (400, openai.BadRequestError, None),
    ],
)
async def test_fault_status(
    openai_client: openai.AsyncOpenAI,
    sim: SimServer,
    status: int,
    error: type[openai.APIStatusError],
    code: str | None,
) -> None:
    sim.faults.add(Fault(model=MODEL, vendor="openai", status=status, remaining=1))
    with trio.fail_after(DEADLINE), pytest.raises(error) as caught:
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO)
    assert caught.value.status_code == status
    assert caught.value.code == code
    assert caught.value.request_id is not None
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "1"
    # The fault was used up: the next request succeeds.
    with trio.fail_after(DEADLINE):
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO)


async def test_fault_for_another_vendor_does_not_apply(
    openai_client: openai.AsyncOpenAI, sim: SimServer
) -> None:
    sim.faults.add(Fault(model=MODEL, vendor="anthropic", status=500))
    with trio.fail_after(DEADLINE):
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO)


async def test_fault_header_applies_to_one_request(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        with pytest.raises(openai.RateLimitError):
            await openai_client.chat.completions.create(
                model=MODEL, messages=HELLO, extra_headers={"x-sim-fault": '{"status": 429}'}
            )
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO)


async def test_unknown_model(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE), pytest.raises(openai.NotFoundError) as caught:
        await openai_client.chat.completions.create(model="unknown-model", messages=HELLO)
    assert caught.value.code == "model_not_found"
    assert caught.value.type == "invalid_request_error"


async def test_context_length(openai_client: openai.AsyncOpenAI) -> None:
    long: Any = [{"role": "user", "content": "word " * 110_000}]
    with trio.fail_after(DEADLINE), pytest.raises(openai.BadRequestError) as caught:
        await openai_client.chat.completions.create(model=MODEL, messages=long)
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "messages"


async def test_missing_key(sim: SimServer) -> None:
    url = sim.base_url("openai") + "/v1/chat/completions"
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient() as client:
            response = await client.post(url, json={"model": MODEL, "messages": HELLO})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert response.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": HELLO}, None),
        ({"model": MODEL}, "messages"),
        ({"model": MODEL, "messages": []}, "messages"),
        ({"model": MODEL, "messages": HELLO, "n": 0}, "n"),
        ({"model": MODEL, "messages": HELLO, "top_logprobs": 2}, "top_logprobs"),
        ({"model": MODEL, "messages": HELLO, "max_tokens": 0}, "max_tokens"),
        ({"model": MODEL, "messages": HELLO, "tools": [{"type": "function"}]}, "tools[0].function"),
    ],
)
async def test_invalid_requests(sim: SimServer, body: Any, param: str | None) -> None:
    url = sim.base_url("openai") + "/v1/chat/completions"
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient(headers={"authorization": "Bearer k"}) as client:
            response = await client.post(url, json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


async def test_stop_after_chunks_cuts_the_stream(
    openai_client: openai.AsyncOpenAI, sim: SimServer
) -> None:
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=3, remaining=1))
    received: list[str] = []
    with trio.fail_after(DEADLINE):
        stream = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            async with stream:
                async for chunk in stream:
                    received.append(chunk.choices[0].delta.content or "")
    assert len(received) == 4  # the role chunk, then three chunks of content
    assert sim.stats.connections_cut == 1
    assert sim.stats.streams_completed == 0
    assert sim.stats.client_disconnects == 0


async def test_stall_delays_but_completes(
    openai_client: openai.AsyncOpenAI, sim: SimServer
) -> None:
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=2, stall_ms=200, remaining=1))
    with trio.fail_after(DEADLINE):
        stream = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, stream=True
        )
        started = trio.current_time()
        async with stream:
            chunks = [chunk async for chunk in stream]
    assert trio.current_time() - started >= 0.2
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert sim.stats.streams_completed == 1


class TestPacedStreams:
    @pytest.fixture
    def sim_config(self) -> SimConfig:
        return SimConfig(ttft_ms=20, tokens_per_second=100)

    async def test_client_disconnect_is_counted(self, sim: SimServer) -> None:
        """A raw socket, so the test decides exactly when the client hangs up."""
        body = json.dumps({"model": MODEL, "messages": HELLO, "stream": True, "max_tokens": 1000})
        request = (
            "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: sim\r\n"
            f"authorization: Bearer k\r\ncontent-length: {len(body)}\r\n\r\n{body}"
        )
        with trio.fail_after(DEADLINE):
            stream = await trio.open_tcp_stream(sim.host, sim.port)
            async with stream:
                await stream.send_all(request.encode())
                received = b""
                while b"data: " not in received:
                    received += await stream.receive_some()
            while sim.stats.open_connections:  # noqa: ASYNC110
                await trio.sleep(0.01)
        assert received.startswith(b"HTTP/1.1 200 OK")
        assert sim.stats.streams_started == 1
        assert sim.stats.streams_completed == 0
        assert sim.stats.client_disconnects == 1

    async def test_pacing_spreads_the_tokens(
        self, openai_client: openai.AsyncOpenAI, sim: SimServer
    ) -> None:
        with trio.fail_after(DEADLINE):
            started = trio.current_time()
            stream = await openai_client.chat.completions.create(
                model=MODEL, messages=HELLO, stream=True, max_tokens=10
            )
            async with stream:
                arrivals = [trio.current_time() - started async for _ in stream]
        # ttft 20 ms, then 10 tokens at 100/s: the last is due 110 ms after the request.
        assert arrivals[1] >= 0.02
        assert arrivals[-1] >= 0.11


async def test_keep_alive_reuses_one_connection(
    openai_client: openai.AsyncOpenAI, sim: SimServer
) -> None:
    with trio.fail_after(DEADLINE):
        for _ in range(3):
            await openai_client.chat.completions.create(model=MODEL, messages=HELLO)
        stream = await openai_client.chat.completions.create(
            model=MODEL, messages=HELLO, stream=True
        )
        async with stream:
            async for _ in stream:
                pass
        await openai_client.models.list()
    assert sim.stats.connections_total == 1
    assert sim.stats.requests_total == 5


async def test_embeddings_float(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        result = await openai_client.embeddings.create(
            model="text-embedding-3-small", input=["one", "two"], encoding_format="float"
        )
        again = await openai_client.embeddings.create(
            model="text-embedding-3-small", input="two", encoding_format="float"
        )
    assert [item.index for item in result.data] == [0, 1]
    vector = result.data[1].embedding
    assert len(vector) == 1536
    assert sum(x * x for x in vector) == pytest.approx(1.0)
    assert again.data[0].embedding == vector
    assert result.data[0].embedding != vector
    assert result.usage.prompt_tokens == result.usage.total_tokens == 2


async def test_embeddings_base64_and_dimensions(sim: SimServer) -> None:
    url = sim.base_url("openai") + "/v1/embeddings"
    body: dict[str, Any] = {"model": "text-embedding-3-large", "input": "hello"}
    with trio.fail_after(DEADLINE):
        async with httpx.AsyncClient(headers={"authorization": "Bearer k"}) as client:
            floats = (await client.post(url, json=body)).json()["data"][0]["embedding"]
            packed = await client.post(url, json={**body, "encoding_format": "base64"})
            short = await client.post(url, json={**body, "dimensions": 256})
            refused = await client.post(
                url, json={"model": "text-embedding-ada-002", "input": "x", "dimensions": 8}
            )
    raw = base64.b64decode(packed.json()["data"][0]["embedding"])
    decoded = struct.unpack(f"<{len(raw) // 4}f", raw)
    assert len(floats) == len(decoded) == 3072
    assert decoded == pytest.approx(floats, abs=1e-6)
    shortened = short.json()["data"][0]["embedding"]
    assert len(shortened) == 256
    assert sum(x * x for x in shortened) == pytest.approx(1.0)
    assert refused.status_code == 400


async def test_embeddings_sdk_default_base64(openai_client: openai.AsyncOpenAI) -> None:
    """The SDK asks for base64 when no format is given and decodes it itself."""
    with trio.fail_after(DEADLINE):
        result = await openai_client.embeddings.create(
            model="text-embedding-3-small", input=[[1, 2, 3]], dimensions=64
        )
    assert len(result.data[0].embedding) == 64
    assert result.usage.prompt_tokens == 3


async def test_models(openai_client: openai.AsyncOpenAI) -> None:
    with trio.fail_after(DEADLINE):
        models = [model.id async for model in openai_client.models.list()]
        one = await openai_client.models.retrieve("gpt-4o")
        with pytest.raises(openai.NotFoundError):
            await openai_client.models.retrieve("unknown-model")
    assert "gpt-4o" in models
    assert one.id == "gpt-4o"
    assert one.object == "model"
