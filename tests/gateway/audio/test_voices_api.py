"""The voice catalog and workspace voice mappings over HTTP."""

from __future__ import annotations

import io
from typing import Any

import httpx
import openai
import pytest
import soundfile

from gateway.app.server import RunningGateway
from providers.voices import STANDARD_IDS, load_voices
from store import audit
from tests.gateway.test_routing_rules_api import key_in

MAPPINGS = "/v1/management/voice-mappings"


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    return error


async def test_voices_list_with_standard_voices(http: httpx.AsyncClient) -> None:
    body = (await http.get("/v1/audio/voices")).json()
    assert [s["id"] for s in body["standard_voices"]] == list(STANDARD_IDS)
    providers = {v["provider"] for v in body["voices"]}
    assert providers == {"openai", "elevenlabs", "google", "local"}
    for standard in body["standard_voices"]:
        assert set(standard["mappings"]) == providers
    voice = body["voices"][0]
    assert set(voice) == {
        "id",
        "name",
        "provider",
        "gender",
        "languages",
        "preview_url",
        "service_standard",
    }


async def test_voice_filters(http: httpx.AsyncClient) -> None:
    only = (await http.get("/v1/audio/voices", params={"provider": "elevenlabs"})).json()
    assert {v["provider"] for v in only["voices"]} == {"elevenlabs"}
    french = (await http.get("/v1/audio/voices", params={"language": "fr"})).json()
    assert french["voices"] and all("fr" in v["languages"] for v in french["voices"])
    # A provider of no catalog is a refusal of what it names, as /v1/models answers it.
    error_of(
        await http.get("/v1/audio/voices", params={"provider": "acme"}), 400, "unknown_provider"
    )
    error_of(
        await http.get("/v1/audio/voices", params={"language": "french"}), 400, "invalid_request"
    )


async def test_voice_detail_and_404(http: httpx.AsyncClient) -> None:
    detail = (await http.get("/v1/audio/voices/21m00Tcm4TlvDq8ikWAM")).json()
    assert detail["name"] == "Rachel" and detail["service_standard"] == "calm"
    assert {"description", "age", "accent", "use_cases", "settings"} <= set(detail)
    assert detail["settings"]["stability"] == 0.5
    error_of(await http.get("/v1/audio/voices/nobody"), 404, "voice_not_found")


async def test_every_voice_detail_has_the_spec_settings_object(http: httpx.AsyncClient) -> None:
    """The spec's detail adds `settings` (three numbers and a boolean) without an 'or
    null': a voice whose vendor has no such controls shows the defaults, not null."""
    for voice_id in ("alloy", "Charon", "en-us"):
        settings = (await http.get(f"/v1/audio/voices/{voice_id}")).json()["settings"]
        assert set(settings) == {"stability", "similarity_boost", "style", "use_speaker_boost"}
        assert all(
            isinstance(settings[k], float) for k in ("stability", "similarity_boost", "style")
        )
        assert isinstance(settings["use_speaker_boost"], bool)


async def test_preview_is_real_audio(http: httpx.AsyncClient) -> None:
    response = await http.get("/v1/audio/voices/en-us+f3/preview")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "audio/mpeg"
    assert soundfile.info(io.BytesIO(response.content)).duration > 1.0


async def test_every_standard_voice_maps_to_known_voices() -> None:
    voices = load_voices()
    for standard in voices.standard:
        for provider, voice_id in standard.mappings.items():
            found = voices.voice(voice_id)
            assert found is not None and found.provider == provider


async def test_mapping_lifecycle_is_audited_and_usable(
    gateway: RunningGateway, http: httpx.AsyncClient, client: openai.AsyncOpenAI
) -> None:
    created = await http.post(
        MAPPINGS,
        json={
            "name": "brand-voice",
            "description": "Our brand",
            "mappings": {"local": "en-us+f4", "openai": "nova"},
            "default_settings": {"stability": 0.4, "speed": 1.1},
        },
    )
    assert created.status_code == 201, created.text
    mapping = created.json()
    assert mapping["id"].startswith("vm_") and mapping["created_at"].endswith("Z")
    listed = (await http.get(MAPPINGS)).json()["data"]
    assert [m["name"] for m in listed] == ["brand-voice"]
    assert (await http.get(f"{MAPPINGS}/{mapping['id']}")).json() == mapping
    error_of(await http.post(MAPPINGS, json={**mapping, "id": None}), 409, "voice_mapping_exists")

    speech = await client.audio.speech.with_raw_response.create(
        model="local-espeak-ng", voice="brand-voice", input="Hello.", response_format="wav"
    )
    assert speech.headers["x-service-provider"] == "local"

    patched = await http.patch(f"{MAPPINGS}/{mapping['id']}", json={"description": "New"})
    assert patched.json()["description"] == "New" and patched.json()["name"] == "brand-voice"
    assert (await http.delete(f"{MAPPINGS}/{mapping['id']}")).status_code == 200
    error_of(await http.get(f"{MAPPINGS}/{mapping['id']}"), 404, "voice_mapping_not_found")
    events = await gateway.state.db.run(lambda d: audit.list_events(d, "default"))
    kinds = [e.type for e in events if e.target_id == mapping["id"]]
    assert kinds == ["voice_mapping.deleted", "voice_mapping.updated", "voice_mapping.created"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"name": "x", "mappings": {"anthropic": "v"}}, "mappings.anthropic"),
        ({"name": "x", "mappings": {}}, "mappings"),
        (
            {"name": "x", "mappings": {"local": "en"}, "default_settings": {"speed": 9}},
            "default_settings.speed",
        ),
        (
            {"name": "x", "mappings": {"local": "en"}, "default_setting": {"speed": 1.2}},
            "default_setting",
        ),
    ],
)
async def test_bad_mappings_are_400(
    http: httpx.AsyncClient, body: dict[str, Any], param: str
) -> None:
    assert error_of(await http.post(MAPPINGS, json=body), 400, "invalid_request")["param"] == param


async def test_a_mapping_named_like_a_voice_is_taken(http: httpx.AsyncClient) -> None:
    """A standard voice's id is a name a mapping could never shadow: 409 like a taken
    name (it was 400 invalid_request, a shape code for a name the document allows)."""
    body = {"name": "calm", "mappings": {"local": "en"}}
    assert error_of(await http.post(MAPPINGS, json=body), 409, "voice_mapping_exists")


async def test_a_foreign_mapping_answers_like_an_unknown_one(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    mine = (await http.post(MAPPINGS, json={"name": "m", "mappings": {"local": "en"}})).json()
    other_key, _ = await key_in(gateway, "ws_other", "admin", ["management", "audio"])
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {other_key}"}, timeout=30
    ) as other:
        assert (await other.get(MAPPINGS)).json()["data"] == []
        for method in ("GET", "PATCH", "DELETE"):
            response = await other.request(method, f"{MAPPINGS}/{mine['id']}", json={"name": "y"})
            error_of(response, 404, "voice_mapping_not_found")
        # Their 'm' is not ours: the name passes through as an unknown voice.
        response = await other.post(
            "/v1/audio/speech", json={"model": "local-espeak-ng", "voice": "m", "input": "hi"}
        )
        assert response.status_code == 400, response.text


async def test_mappings_need_management(gateway: RunningGateway) -> None:
    audio_only, _ = await key_in(gateway, "default", "prod", ["audio"])
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {audio_only}"}, timeout=10
    ) as raw:
        error_of(await raw.get(MAPPINGS), 403, "insufficient_permissions")


async def test_a_mappings_default_speed_applies_unless_the_request_sets_one(
    http: httpx.AsyncClient,
) -> None:
    """`default_settings.speed` 2.0 speaks the same text in about half the time; a
    request's own `speed` wins over it."""
    for name, settings in (("plain", {}), ("quick", {"speed": 2.0})):
        body = {"name": name, "mappings": {"local": "en-us"}, "default_settings": settings}
        assert (await http.post(MAPPINGS, json=body)).status_code == 201

    async def seconds(voice: str, **extra: object) -> float:
        response = await http.post(
            "/v1/audio/speech",
            json={
                "model": "local-espeak-ng",
                "voice": voice,
                "input": "The meeting has been moved to Thursday afternoon.",
                "response_format": "wav",
                **extra,
            },
        )
        assert response.status_code == 200, response.text
        return float(soundfile.info(io.BytesIO(response.content)).duration)

    plain = await seconds("plain")
    assert await seconds("quick") < 0.7 * plain
    assert await seconds("quick", speed=1.0) == pytest.approx(plain, rel=0.05)


ADAM = "pNInz6obpgDQGcFmaJgB"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_named_model_without_the_voice_is_reported_as_a_fallback(
    http: httpx.AsyncClient, stream: bool
) -> None:
    """Adam is ElevenLabs' alone (no standard voice): OpenAI cannot speak it, so
    ElevenLabs does, and the headers say another model than the named one served."""

    async def headers(model: str) -> httpx.Headers:
        body = {"model": model, "voice": ADAM, "input": "hi", "stream": stream}
        response = await http.post("/v1/audio/speech", json=body)
        assert response.status_code == 200, response.text
        return response.headers

    elsewhere = await headers("tts-1")
    assert elsewhere["x-service-provider"] == "elevenlabs"
    assert elsewhere["x-service-fallback"] == "true"
    assert (await headers("eleven_flash_v2_5"))["x-service-fallback"] == "false"


async def test_every_openai_voice_speaks_on_the_other_vendors(http: httpx.AsyncClient) -> None:
    """The voices realtime clients send by default (`marin`, `cedar`) and the rest of
    OpenAI's list are paired with a standard voice, so ElevenLabs speaks them too."""
    for voice in ("marin", "cedar", "ash", "ballad", "fable", "shimmer", "verse"):
        body = {"model": "eleven_flash_v2_5", "voice": voice, "input": "hi"}
        response = await http.post("/v1/audio/speech", json=body)
        assert response.status_code == 200, response.text
        assert response.headers["x-service-provider"] == "elevenlabs"


async def test_a_mapping_read_and_sent_back_is_accepted(http: httpx.AsyncClient) -> None:
    """The read-only fields of a mapping's own answer are let through on a PUT."""
    body = {"name": "narrator", "mappings": {"local": "en"}}
    created = (await http.post(MAPPINGS, json=body)).json()
    sent_back = created | {"description": "the narrator's voice"}
    answer = await http.put(f"{MAPPINGS}/{created['id']}", json=sent_back)
    assert answer.status_code == 200, answer.text
    assert answer.json()["description"] == "the narrator's voice"
