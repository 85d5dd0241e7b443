"""The ElevenLabs simulator and our adapter, over real HTTP on 127.0.0.1.

The adapter runs over both upstream clients the app can pick (the lean HTTP/1.1 pool and
httpx); the simulator's own answers are checked with plain httpx, so that their shapes
(a bare array of models, `{"detail": {status, message}}` errors) are ElevenLabs' own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from providers.adapters import build_adapter
from providers.base import ProviderEndpoint
from providers.elevenlabs import ElevenLabsProvider, Voice
from providers.errors import (
    AuthenticationFailed,
    InvalidUpstreamRequest,
    ModelOverloaded,
    ProviderError,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.sim.core import Fault
from providers.sim.elevenlabs import VENDOR
from providers.sim.server import SimServer
from providers.upstream import HttpxUpstream, LeanUpstream, Upstream

CATALOG_MODELS = ["eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"]
DEADLINE = 10


@pytest.fixture(params=["lean", "httpx"])
async def upstream(request: pytest.FixtureRequest) -> AsyncIterator[Upstream]:
    if request.param == "lean":
        lean = LeanUpstream()
        try:
            yield lean
        finally:
            await lean.aclose()
    else:
        async with httpx.AsyncClient() as client:
            yield HttpxUpstream(client)


def adapter_for(sim: SimServer, upstream: Upstream, api_key: str = "xi-test") -> ElevenLabsProvider:
    endpoint = ProviderEndpoint("elevenlabs", sim.base_url("elevenlabs"), api_key)
    adapter = build_adapter(upstream, endpoint)
    assert isinstance(adapter, ElevenLabsProvider)
    return adapter


@pytest.fixture
def adapter(sim: SimServer, upstream: Upstream) -> ElevenLabsProvider:
    return adapter_for(sim, upstream)


@pytest.fixture
async def raw(sim: SimServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=sim.base_url("elevenlabs"), timeout=DEADLINE) as c:
        yield c


# -- the adapter ---------------------------------------------------------------------------


async def test_list_models_gives_the_catalog_models(adapter: ElevenLabsProvider) -> None:
    with trio.fail_after(DEADLINE):
        assert await adapter.list_models() == CATALOG_MODELS


async def test_list_voices(adapter: ElevenLabsProvider) -> None:
    with trio.fail_after(DEADLINE):
        voices = await adapter.list_voices()
    assert [voice.name for voice in voices] == ["Rachel", "Sarah", "George", "Liam", "Adam"]
    assert voices[0] == Voice(
        "21m00Tcm4TlvDq8ikWAM",
        "Rachel",
        {
            "accent": "american",
            "descriptive": "calm",
            "age": "young",
            "gender": "female",
            "language": "en",
            "use_case": "narrative_story",
        },
    )
    with trio.fail_after(DEADLINE):
        assert await adapter.list_voices() == voices  # deterministic


@pytest.mark.parametrize(
    ("fault", "error_class", "message"),
    [
        (Fault(model="*", status=401), AuthenticationFailed, "Invalid API key"),
        (Fault(model="*", status=403), AuthenticationFailed, None),
        (
            Fault(model="*", status=429),
            ModelOverloaded,
            "Too many concurrent requests for your subscription. Please upgrade your plan.",
        ),
        (Fault(model="*", status=500), UpstreamHTTPError, "An internal server error occurred."),
        (Fault(model="*", status=503), UpstreamUnavailable, None),
        (Fault(model="*", status=504), UpstreamTimeout, None),
        (Fault(model="*", status=422, message="bad page"), InvalidUpstreamRequest, "bad page"),
    ],
)
async def test_faults_are_mapped(
    sim: SimServer,
    adapter: ElevenLabsProvider,
    fault: Fault,
    error_class: type[ProviderError],
    message: str | None,
) -> None:
    sim.faults.add(fault)
    with trio.fail_after(DEADLINE), pytest.raises(error_class) as caught:
        await adapter.list_models()
    assert caught.value.provider == "elevenlabs"
    if message is not None:
        assert caught.value.message == message
    with trio.fail_after(DEADLINE), pytest.raises(error_class):
        await adapter.list_voices()


async def test_a_fault_of_another_vendor_does_not_apply(
    sim: SimServer, adapter: ElevenLabsProvider
) -> None:
    sim.faults.add(Fault(model="*", vendor="openai", status=500))
    sim.faults.add(Fault(model="*", vendor=VENDOR, status=429, remaining=1))
    with trio.fail_after(DEADLINE):
        with pytest.raises(ModelOverloaded):
            await adapter.list_models()
        assert await adapter.list_models() == CATALOG_MODELS  # the 429 was used up


async def test_missing_key_is_authentication_failed(sim: SimServer, upstream: Upstream) -> None:
    adapter = adapter_for(sim, upstream, api_key="")
    with trio.fail_after(DEADLINE), pytest.raises(AuthenticationFailed) as caught:
        await adapter.list_models()
    assert "xi-api-key" in caught.value.message


async def test_unreachable_upstream_is_unavailable(upstream: Upstream) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = sock.getsockname()[1]
        endpoint = ProviderEndpoint("elevenlabs", f"http://127.0.0.1:{port}/elevenlabs", "k")
        adapter = build_adapter(upstream, endpoint)
        with trio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailable):
            await adapter.list_models()


# -- the simulator's wire shapes -----------------------------------------------------------


async def test_models_are_a_bare_array_of_model_objects(raw: httpx.AsyncClient) -> None:
    response = await raw.get("/v1/models", headers={"xi-api-key": "k"})
    assert response.status_code == 200
    models = response.json()
    assert isinstance(models, list)
    assert [m["model_id"] for m in models] == CATALOG_MODELS
    for model in models:
        assert model["can_do_text_to_speech"] is True
        assert {"language_id": "en", "name": "English"} in model["languages"]
        assert {"name", "description", "token_cost_factor", "model_rates"} <= set(model)
    assert len(models[0]["languages"]) == 29
    assert len(models[1]["languages"]) == 32


async def test_missing_key_gets_elevenlabs_401_body(raw: httpx.AsyncClient) -> None:
    for path in ("/v1/models", "/v1/voices", "/v2/voices", "/v1/user"):
        response = await raw.get(path)
        assert response.status_code == 401, path
        detail = response.json()["detail"]
        assert detail["status"] == "needs_authorization"
        assert "xi-api-key" in detail["message"]


async def test_fault_code_and_message_fill_the_detail(raw: httpx.AsyncClient) -> None:
    header = json.dumps({"status": 429, "code": "system_busy", "message": "busy"})
    response = await raw.get("/v1/voices", headers={"xi-api-key": "k", "x-sim-fault": header})
    assert response.status_code == 429
    assert response.json() == {"detail": {"status": "system_busy", "message": "busy"}}


async def test_voice_search_filters_and_pages(raw: httpx.AsyncClient) -> None:
    headers = {"xi-api-key": "k"}
    first = (await raw.get("/v2/voices", params={"page_size": 2}, headers=headers)).json()
    assert [v["name"] for v in first["voices"]] == ["Rachel", "Sarah"]
    assert (first["has_more"], first["total_count"]) == (True, 5)
    params = {"page_size": 2, "next_page_token": first["next_page_token"]}
    second = (await raw.get("/v2/voices", params=params, headers=headers)).json()
    assert [v["name"] for v in second["voices"]] == ["George", "Liam"]
    british = (await raw.get("/v2/voices", params={"search": "BRITISH"}, headers=headers)).json()
    assert [v["name"] for v in british["voices"]] == ["George"]
    assert (british["has_more"], british["next_page_token"]) == (False, None)
    bad = await raw.get("/v2/voices", params={"page_size": 0}, headers=headers)
    assert bad.status_code == 422
    assert bad.json()["detail"]["status"] == "invalid_parameters"


async def test_user_is_stable_per_key(raw: httpx.AsyncClient) -> None:
    one = (await raw.get("/v1/user", headers={"xi-api-key": "a"})).json()
    again = (await raw.get("/v1/user", headers={"xi-api-key": "a"})).json()
    other = (await raw.get("/v1/user", headers={"xi-api-key": "b"})).json()
    assert one == again
    assert one["user_id"] != other["user_id"]
    assert one["subscription"]["tier"] == "creator"
    assert one["subscription"]["character_limit"] == 100_000
