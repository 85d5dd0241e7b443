"""Chat completions through the official `openai` client, for every chat vendor.

Only `base_url` and `api_key` differ from talking to OpenAI itself; the simulators speak
each vendor's real protocol behind the gateway.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from providers.sim.core import Fault
from store import usage

CHAT_MODELS = ["gpt-4o-mini", "claude-haiku-4-5", "gemini-2.5-flash", "mistral-small-latest"]
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
HELLO: Any = [{"role": "user", "content": "Hello there"}]


def provider_of(model: str) -> str:
    info = load_catalog().model(model)
    assert info is not None
    return info.provider


def upstream(model: str) -> str:
    """The id the simulator sees for a catalog model (faults are set per upstream id)."""
    info = load_catalog().model(model)
    assert info is not None
    return info.upstream_id


@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_plain_completion_has_the_protocol_shape_and_metadata(
    client: openai.AsyncOpenAI, model: str
) -> None:
    raw = await client.chat.completions.with_raw_response.create(model=model, messages=HELLO)
    answer = raw.parse()
    assert answer.object == "chat.completion"
    assert answer.model == model
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].message.content
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens > 0

    extra = answer.model_extra or {}
    meta, service = extra["_gateway"], extra["service"]
    assert meta["routing"]["model"] == model
    assert meta["energy"]["energy_kwh"] > 0 and meta["carbon"]["carbon_gco2e"] > 0
    assert service["cost"]["total"] > 0 and service["cache"] == {"hit": False}
    assert raw.headers["x-request-id"] == meta["request_id"] == service["request_id"]
    assert raw.headers["x-service-model-used"] == f"{service['provider']}/{model}"
    assert float(raw.headers["x-service-energy-kwh"]) > 0
    assert float(raw.headers["x-service-carbon-gco2e"]) > 0


@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_stream_matches_the_plain_answer(client: openai.AsyncOpenAI, model: str) -> None:
    plain = await client.chat.completions.create(model=model, messages=HELLO)
    stream = await client.chat.completions.create(
        model=model, messages=HELLO, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishing] == ["stop"]
    assert "_gateway" in (finishing[0].model_extra or {})
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


@pytest.mark.parametrize("model", CHAT_MODELS)
@pytest.mark.parametrize("stream", [False, True])
async def test_tool_call_round_trip(client: openai.AsyncOpenAI, model: str, stream: bool) -> None:
    ask: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
    call_id, name, arguments = await _one_tool_call(client, model, ask, stream)
    assert name == "get_weather"
    assert set(json.loads(arguments)) == {"city"}

    follow_up = [
        *ask,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": '{"temperature_c": 18}'},
    ]
    answer = await client.chat.completions.create(
        model=model, messages=follow_up, tools=[WEATHER_TOOL]
    )
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content
    assert (answer.model_extra or {})["_gateway"]["tools"]["tool_count"] == 1


async def _one_tool_call(
    client: openai.AsyncOpenAI, model: str, messages: Any, stream: bool
) -> tuple[str, str, str]:
    if not stream:
        answer = await client.chat.completions.create(
            model=model, messages=messages, tools=[WEATHER_TOOL]
        )
        assert answer.choices[0].finish_reason == "tool_calls"
        calls = answer.choices[0].message.tool_calls or []
        assert len(calls) == 1
        meta = (answer.model_extra or {})["_gateway"]["tools"]
        assert meta["tool_calls_made"] == 1 and meta["tools_called"] == ["get_weather"]
        call = calls[0]
        return call.id, call.function.name, call.function.arguments  # type: ignore[union-attr]
    chunks = [
        c
        async for c in await client.chat.completions.create(
            model=model, messages=messages, tools=[WEATHER_TOOL], stream=True
        )
    ]
    pieces = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert pieces and pieces[0].id and pieces[0].function and pieces[0].function.name
    assert {p.index for p in pieces} == {0}
    arguments = "".join(p.function.arguments or "" for p in pieces if p.function)
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["tool_calls"]
    return pieces[0].id, pieces[0].function.name, arguments


async def test_legacy_functions_are_converted_with_a_deprecation_header(
    client: openai.AsyncOpenAI,
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        functions=[WEATHER_TOOL["function"]],
        function_call={"name": "get_weather"},
    )
    answer = raw.parse()
    assert raw.headers["deprecation"] == "true"
    assert "deprecated" in raw.headers["x-service-deprecation-warning"]
    call = answer.choices[0].message.function_call  # answered in the legacy shape
    assert call is not None and call.name == "get_weather"


async def test_provider_field_forces_the_provider(client: openai.AsyncOpenAI) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model="claude-haiku-4-5", messages=HELLO, extra_body={"provider": "anthropic"}
    )
    assert raw.headers["x-service-model-used"] == "anthropic/claude-haiku-4-5"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, extra_body={"provider": "nobody"}
        )
    assert caught.value.body["param"] == "provider"  # type: ignore[index]


async def test_auto_routes_and_explains(client: openai.AsyncOpenAI) -> None:
    for mode in ("balanced", "cost_optimized", "performance", "low_latency", "sustain_optimized"):
        answer = await client.chat.completions.create(
            model="auto", messages=HELLO, extra_body={"routing_mode": mode}
        )
        routing = (answer.model_extra or {})["_gateway"]["routing"]
        assert routing["mode"] == mode
        assert routing["model"] == answer.model != "auto"
        assert mode in routing["reasoning"]


@pytest.mark.parametrize("provider", ["anthropic", "mistral"])
async def test_auto_with_a_forced_provider_routes_among_its_models(
    client: openai.AsyncOpenAI, provider: str
) -> None:
    """`auto` was sent to the forced vendor as the model id "auto" (served at no cost
    by the simulator, a 404 from the real vendor)."""
    raw = await client.chat.completions.with_raw_response.create(
        model="auto",
        messages=HELLO,
        extra_body={"provider": provider, "routing_mode": "performance"},
    )
    answer = raw.parse()
    info = load_catalog().model(answer.model)
    assert info is not None and info.provider == provider
    assert raw.headers["x-service-model-used"] == f"{provider}/{answer.model}"
    routing = (answer.model_extra or {})["_gateway"]["routing"]
    assert "forced" in routing["reasoning"] and routing["actual_cost"] > 0


# -- errors -------------------------------------------------------------------------------


async def test_a_bad_key_is_an_authentication_error(gateway: RunningGateway) -> None:
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key="gw_prod_not_a_real_key", max_retries=0
    ) as stranger:
        with pytest.raises(openai.AuthenticationError) as caught:
            await stranger.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert caught.value.code == "invalid_api_key"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"temperature": 3}, "temperature"),
        ({"top_p": -0.5}, "top_p"),
        ({"presence_penalty": 2.5}, "presence_penalty"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"routing_mode": "fastest"}, "routing_mode"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ],
)
async def test_bad_parameters_are_named(
    client: openai.AsyncOpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, extra_body=extra)
    assert caught.value.body["param"] == param  # type: ignore[index]
    assert caught.value.body["value"] == extra[param]  # type: ignore[index]


@pytest.mark.parametrize(
    ("extra", "param", "value"),
    [
        ({"service": {"cache": "never"}}, "service.cache", "never"),
        ({"service": {"cache": False}}, "service.cache", False),
        (
            {"service": {"rate_limit_handling": {"strategy": "queue", "max_wait_ms": -1}}},
            "service.rate_limit_handling.max_wait_ms",
            -1,
        ),
        (
            {"service": {"rate_limit_handling": {"strategy": "wait"}}},
            "service.rate_limit_handling.strategy",
            "wait",
        ),
        ({"service": {"retry": {"max_attempts": "3"}}}, "service.retry.max_attempts", "3"),
        (
            {"service": {"retry": {"retryable_errors": "provider_error"}}},
            "service.retry.retryable_errors",
            "provider_error",
        ),
        ({"response_format": {"type": "yaml"}}, "response_format.type", "yaml"),
        ({"logprobs": "yes"}, "logprobs", "yes"),
        ({"top_logprobs": 2}, "top_logprobs", 2),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", None),
    ],
)
async def test_bad_nested_options_name_their_exact_field(
    client: openai.AsyncOpenAI, extra: dict[str, Any], param: str, value: Any
) -> None:
    """`service.cache` other than `skip` and an unknown `response_format` were silently
    ignored; the `service` sub-fields' errors named only their parent."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, extra_body=extra)
    body: Any = caught.value.body
    assert (body["code"], body["param"], body["value"]) == ("invalid_request", param, value)


async def test_every_response_format_type_is_accepted(client: openai.AsyncOpenAI) -> None:
    schema = {"name": "answer", "schema": {"type": "object", "properties": {}}}
    formats: list[Any] = [
        {"type": "text"},
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": schema},
    ]
    for response_format in formats:
        answer = await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, response_format=response_format
        )
        assert answer.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    "model", ["gpt-4o-mini", "mistral-small-latest", "gemini-2.5-flash", "command-a-03-2025"]
)
async def test_json_mode_answers_json_from_every_vendor_that_has_it(
    client: openai.AsyncOpenAI, model: str
) -> None:
    """JSON mode reaches each vendor in its own terms (OpenAI's and Mistral's
    `response_format`, Gemini's `responseMimeType`/`responseSchema`, Cohere's
    `json_object`), and the content parses: an object, and the asked shape with a schema."""
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }
    formats: list[Any] = [
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"name": "place", "schema": schema}},
    ]
    free, shaped = [
        await client.chat.completions.create(
            model=model,
            messages=HELLO,
            response_format=f,
            extra_body={"service": {"cache": "skip"}},
        )
        for f in formats
    ]
    assert isinstance(json.loads(free.choices[0].message.content or ""), dict)
    place = json.loads(shaped.choices[0].message.content or "")
    assert isinstance(place["city"], str) and isinstance(place["population"], int)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "wizard", "content": "x"}],
        [{"role": "user"}],
        [{"role": "tool", "content": "x"}],
    ],
)
async def test_bad_messages_are_rejected(client: openai.AsyncOpenAI, messages: Any) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert str(caught.value.body["param"]).startswith("messages")  # type: ignore[index]


async def test_an_unknown_model_lists_the_available_ones(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="gpt-17-ultra", messages=HELLO)
    body: Any = caught.value.body
    assert body["code"] == "model_not_found" and body["model"] == "gpt-17-ultra"
    assert "gpt-5.4-mini" in body["available_models"]
    assert "gpt-4o-mini" not in body["available_models"]  # deprecated: not offered


async def test_the_envelope_for_a_body_that_is_not_json(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/v1/chat/completions", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert set(response.json()["error"]) >= {"message", "type", "code", "doc_url"}


@pytest.mark.parametrize(
    ("status", "expected_status", "code", "error_type"),
    [
        (500, 502, "provider_error", openai.InternalServerError),
        (429, 503, "model_overloaded", openai.InternalServerError),
        (503, 503, "provider_unavailable", openai.InternalServerError),
        (404, 404, "model_not_found", openai.NotFoundError),
    ],
)
@pytest.mark.parametrize("model", CHAT_MODELS)
@pytest.mark.parametrize("stream", [False, True])
async def test_upstream_failures_map_to_the_spec_codes(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    model: str,
    stream: bool,
    status: int,
    expected_status: int,
    code: str,
    error_type: type[openai.APIStatusError],
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream(model), status=status, remaining=1))
    provider = provider_of(model)
    with pytest.raises(error_type) as caught:  # a forced provider has no fallbacks
        await client.chat.completions.create(
            model=model, messages=HELLO, stream=stream, extra_body={"provider": provider}
        )
    assert caught.value.status_code == expected_status
    body: Any = caught.value.body
    assert body["code"] == code
    assert body["provider"] == provider
    if code == "model_not_found":  # the type of the gateway's own 404 for an unknown model
        assert body["type"] == "not_found_error"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_slow_upstream_is_a_gateway_timeout(
    gateway: RunningGateway, client: openai.AsyncOpenAI, stream: bool
) -> None:
    """For a stream, the first-chunk deadline also covers the wait for the upstream's
    answer head: a forced provider that sends nothing is a 504 before the stream starts,
    not a hang."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=5_000, remaining=1))
    with trio.fail_after(4), pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, stream=stream, extra_body={"provider": "openai"}
        )
    assert caught.value.status_code == 504
    assert caught.value.body["code"] == "provider_timeout"  # type: ignore[index]
    assert caught.value.body["timeout_ms"] == 1000  # type: ignore[index]


async def test_a_stream_whose_upstream_never_answers_falls_back(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", delay_ms=5_000, remaining=1))
    with trio.fail_after(4):
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=HELLO,
            stream=True,
            extra_body={"service": {"fallbacks": ["mistral-small-latest"]}},
        )
        chunks = [chunk async for chunk in stream]
    final: Any = next(c for c in chunks if c.choices and c.choices[0].finish_reason).model_extra
    fallback = final["_gateway"]["fallback"]
    assert fallback["fallback_attempted"] is True
    assert fallback["fallback_provider"] == "mistral"
    assert [(a["provider"], a["error"]) for a in fallback["attempts"]][:1] == [
        ("openai", "provider_timeout")
    ]


@pytest.fixture
def settings(settings: Any) -> Any:
    """Short upstream deadlines so the timeout test runs in a second."""
    import attrs

    return attrs.evolve(settings, upstream_timeout_s=1.0, first_chunk_timeout_s=1.0)


@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_a_stream_cut_midway_ends_with_an_error_event(
    gateway: RunningGateway, client: openai.AsyncOpenAI, model: str
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream(model), stop_after_chunks=2, remaining=1))
    received = []
    with trio.fail_after(5), pytest.raises(openai.APIError):
        async for chunk in await client.chat.completions.create(
            model=model, messages=HELLO, stream=True
        ):
            received.append(chunk)
    assert received and received[0].choices[0].delta.role == "assistant"


async def test_a_client_disconnect_closes_the_upstream_at_once(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="gpt-4o-mini", stop_after_chunks=2, stall_ms=60_000, remaining=1))
    body = {"model": "gpt-4o-mini", "messages": HELLO, "stream": True}
    before = sim.stats.client_disconnects
    with trio.fail_after(5):
        async with http.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            assert (await anext(lines)).startswith("data: ")
        # The client has gone; the gateway must drop its upstream connection right away.
        while sim.stats.client_disconnects == before:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert sim.stats.client_disconnects == before + 1


async def test_models_list_filters_and_detail(client: openai.AsyncOpenAI) -> None:
    models = [m async for m in client.models.list()]
    ids = {m.id for m in models}
    for required in (
        "gpt-4o",
        "gpt-4o-mini",
        "text-embedding-3-small",
        "whisper-1",
        "tts-1",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "mistral-large-latest",
        "mistral-small-latest",
        "mistral-ocr-latest",
        "rerank-v3.5",
        "eleven_multilingual_v2",
        "eleven_flash_v2_5",
    ):
        assert required in ids
    service = (models[0].model_extra or {})["service"]
    assert {"provider", "capabilities", "context_window", "pricing", "status"} <= set(service)

    detail = await client.models.retrieve("gpt-4o")
    extra = (detail.model_extra or {})["service"]
    assert {"aliases", "recommended_for", "fallback_chain"} <= set(extra)
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("no-such-model")


@pytest.mark.parametrize(
    ("query", "check"),
    [
        ("provider=anthropic", lambda m: m["service"]["provider"] == "anthropic"),
        ("capability=embeddings", lambda m: "embeddings" in m["service"]["capabilities"]),
        ("status=deprecated", lambda m: "deprecation" in m["service"]),
    ],
)
async def test_models_filters(http: httpx.AsyncClient, query: str, check: Any) -> None:
    data = (await http.get(f"/v1/models?{query}")).json()["data"]
    assert data and all(check(m) for m in data)
    assert (await http.get("/v1/models?capability=teleport")).status_code == 400


async def test_the_provider_filter_takes_the_owned_by_name_in_any_case(
    http: httpx.AsyncClient,
) -> None:
    by_id = (await http.get("/v1/models?provider=openai")).json()["data"]
    owner = by_id[0]["owned_by"]
    assert owner != "openai"  # the display name, as `owned_by` shows it
    for spelling in (owner, owner.upper(), "OpenAI"):
        assert (await http.get(f"/v1/models?provider={spelling}")).json()["data"] == by_id
    unknown = await http.get("/v1/models?provider=openia")
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "provider"


async def test_a_prompt_over_the_context_window_is_named(client: openai.AsyncOpenAI) -> None:
    huge = "word " * 150_000  # about 190k tokens, over gpt-4o-mini's 128k window
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": huge}],
            extra_body={"provider": "openai"},
        )
    body: Any = caught.value.body
    assert body["code"] == "context_length_exceeded"
    assert body["provider"] == "openai" and body["model"] == "gpt-4o-mini"


async def test_a_blocked_prompt_is_a_content_filter_error(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream("gemini-2.5-flash"), code="prompt_blocked"))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gemini-2.5-flash", messages=HELLO, extra_body={"provider": "google"}
        )
    body: Any = caught.value.body
    assert body["code"] == "content_filter" and body["provider"] == "google"
    assert body["filter_reason"]


async def test_a_safety_stop_is_a_content_filter_finish(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model=upstream("gemini-2.5-flash"), code="safety"))
    answer = await client.chat.completions.create(model="gemini-2.5-flash", messages=HELLO)
    assert answer.choices[0].finish_reason == "content_filter"


async def test_a_streams_usage_record_has_the_figures_its_final_chunk_reported(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """One accounting per stream: what the client was told it cost (and how long it took)
    is what the usage log and the analytics built on it say."""
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, stream=True, max_tokens=30
    )
    chunks = [chunk async for chunk in stream]
    final: Any = next(c for c in chunks if c.choices and c.choices[0].finish_reason).model_extra
    service = final["service"]

    await gateway.state.usage.flush()
    records = await gateway.state.db.run(lambda d: usage.list_for_request(d, service["request_id"]))
    assert [(r.status, r.endpoint) for r in records] == [(200, "chat")]
    assert records[0].cost_usd == service["cost"]["total"]
    assert records[0].latency_ms == service["latency_ms"]
    assert records[0].energy_kwh == final["_gateway"]["energy"]["energy_kwh"]


async def test_a_cached_answer_has_the_footprint_headers_too(client: openai.AsyncOpenAI) -> None:
    """The spec's response headers are on every answer: a cache hit had no
    `X-Service-Energy-Kwh` / `X-Service-Carbon-gCO2e` (its footprint is zero)."""
    messages: Any = [{"role": "user", "content": "Say it twice, from the cache"}]
    first = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=messages
    )
    again = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=messages
    )
    assert again.parse().model_extra["service"]["cache"] == {"hit": True}  # type: ignore[index]
    assert float(first.headers["x-service-energy-kwh"]) > 0
    assert float(again.headers["x-service-energy-kwh"]) == 0.0
    assert float(again.headers["x-service-carbon-gco2e"]) == 0.0


@pytest.mark.parametrize("stream", [False, True])
async def test_the_callers_trace_id_is_echoed(http: httpx.AsyncClient, stream: bool) -> None:
    """`X-Service-Trace-Id` (the spec's custom trace id) was kept only in the usage log;
    the answer now carries it back, streamed or not."""
    body = {"model": "gpt-4o-mini", "messages": HELLO, "stream": stream}
    headers = {"X-Service-Trace-Id": "trace-4f2a"}
    async with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as answer:
        await answer.aread()
    assert answer.status_code == 200
    assert answer.headers["x-service-trace-id"] == "trace-4f2a"
    plain = await http.post("/v1/chat/completions", json=body)
    assert "x-service-trace-id" not in plain.headers


async def test_openais_context_refusal_names_the_window_and_the_request(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """The spec's `context_length_exceeded` carries `max_tokens` and `requested_tokens`;
    from OpenAI both were null, though its message gives them."""
    assert gateway.sim is not None
    message = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130512 tokens. Please reduce the length of the messages."
    )
    gateway.sim.faults.add(
        Fault(
            model=upstream("gpt-4o"),
            status=400,
            code="context_length_exceeded",
            message=message,
            remaining=1,
        )
    )
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o", messages=HELLO, extra_body={"provider": "openai"}
        )
    body: Any = caught.value.body
    assert body["code"] == "context_length_exceeded"
    assert (body["provider"], body["model"]) == ("openai", "gpt-4o")
    assert (body["max_tokens"], body["requested_tokens"]) == (128000, 130512)


async def test_a_deprecated_models_answer_says_so(client: openai.AsyncOpenAI) -> None:
    """The catalog marks gpt-4o deprecated (its `/v1/models` entry shows the
    dates); its answers gave no sign of it."""
    info = load_catalog().model("gpt-4o")
    assert info is not None and info.deprecation is not None
    raw = await client.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
    assert raw.headers["deprecation"] == "true"
    warning = raw.headers["x-service-deprecation-warning"]
    assert info.deprecation.sunset_date in warning and info.deprecation.replacement in warning
    day, month, year = raw.headers["sunset"].split()[1:4]
    assert f"{day} {month} {year}" == datetime.strptime(
        info.deprecation.sunset_date, "%Y-%m-%d"
    ).strftime("%d %b %Y")
    current = await client.chat.completions.with_raw_response.create(
        model="gpt-5.4-mini", messages=HELLO
    )
    assert "deprecation" not in current.headers and "sunset" not in current.headers
