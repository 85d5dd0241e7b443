"""The ElevenLabs simulator as the official `elevenlabs` SDK sees it.

The SDK's synchronous client runs in a worker thread (its async client sleeps with
asyncio between retries, so it is not trio-safe) against the simulator on the test's trio
loop; retries are off so that errors surface at once. Skipped when the SDK is not
installed (it is a test-only dependency, like the other vendors' SDKs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import httpx
import pytest
import trio

from providers.sim.core import Fault
from providers.sim.server import SimServer

elevenlabs = pytest.importorskip("elevenlabs")
from elevenlabs.core.api_error import ApiError  # noqa: E402

T = TypeVar("T")
DEADLINE = 10
NO_RETRIES = {"max_retries": 0}
CATALOG_MODELS = ["eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2_5"]


@pytest.fixture
def sdk(sim: SimServer) -> Iterator[elevenlabs.ElevenLabs]:
    """The SDK pointed at the simulator, its connection pool closed after the test."""
    with httpx.Client(timeout=DEADLINE) as http:
        yield elevenlabs.ElevenLabs(
            api_key="xi-test", base_url=sim.base_url("elevenlabs"), httpx_client=http
        )


async def in_thread(call: Callable[[], T]) -> T:
    with trio.fail_after(DEADLINE):
        return await trio.to_thread.run_sync(call)


async def test_models_list(sdk: elevenlabs.ElevenLabs) -> None:
    models = await in_thread(lambda: sdk.models.list(request_options=NO_RETRIES))
    assert [model.model_id for model in models] == CATALOG_MODELS
    first = models[0]
    assert first.name == "Eleven Multilingual v2"
    assert first.can_do_text_to_speech is True
    assert first.languages is not None
    assert "en" in [language.language_id for language in first.languages]


async def test_voices_get_all(sdk: elevenlabs.ElevenLabs) -> None:
    answer = await in_thread(lambda: sdk.voices.get_all(request_options=NO_RETRIES))
    names = [voice.name for voice in answer.voices]
    assert names == ["Rachel", "Sarah", "George", "Liam", "Adam"]
    george = answer.voices[2]
    assert george.voice_id == "JBFqnCBsd6RMkjVDRZzb"
    assert george.category == "premade"
    assert george.labels is not None and george.labels["accent"] == "british"
    assert george.preview_url is not None and george.preview_url.endswith(".mp3")


async def test_voices_search_pages(sdk: elevenlabs.ElevenLabs) -> None:
    first = await in_thread(lambda: sdk.voices.search(page_size=3, request_options=NO_RETRIES))
    assert [voice.name for voice in first.voices] == ["Rachel", "Sarah", "George"]
    assert (first.has_more, first.total_count) == (True, 5)
    token = first.next_page_token
    rest = await in_thread(
        lambda: sdk.voices.search(page_size=3, next_page_token=token, request_options=NO_RETRIES)
    )
    assert [voice.name for voice in rest.voices] == ["Liam", "Adam"]
    assert rest.has_more is False
    found = await in_thread(lambda: sdk.voices.search(search="deep", request_options=NO_RETRIES))
    assert [voice.name for voice in found.voices] == ["Adam"]


async def test_user_get(sdk: elevenlabs.ElevenLabs) -> None:
    user = await in_thread(lambda: sdk.user.get(request_options=NO_RETRIES))
    assert user.subscription.tier == "creator"
    assert user.subscription.status == "active"
    assert user.user_id


async def test_bad_key_is_401_with_elevenlabs_detail(sim: SimServer) -> None:
    sim.faults.add(Fault(model="*", vendor="elevenlabs", status=401, remaining=1))
    with httpx.Client(timeout=DEADLINE) as http:
        client = elevenlabs.ElevenLabs(
            api_key="xi-wrong", base_url=sim.base_url("elevenlabs"), httpx_client=http
        )
        with pytest.raises(ApiError) as caught:
            await in_thread(lambda: client.models.list(request_options=NO_RETRIES))
    assert caught.value.status_code == 401
    assert caught.value.body == {
        "detail": {"status": "invalid_api_key", "message": "Invalid API key"}
    }


async def test_rate_limit_is_429(sim: SimServer, sdk: elevenlabs.ElevenLabs) -> None:
    sim.faults.add(Fault(model="*", status=429, remaining=1))
    with pytest.raises(ApiError) as caught:
        await in_thread(lambda: sdk.voices.get_all(request_options=NO_RETRIES))
    assert caught.value.status_code == 429
    assert caught.value.body["detail"]["status"] == "too_many_concurrent_requests"
