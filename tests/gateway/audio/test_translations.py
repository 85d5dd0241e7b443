"""POST /v1/audio/translations through the gateway with the official `openai` client:
every response format, the families that do not translate, refused fields and audio, the
usage record, and a fallback from a failing OpenAI to Gemini."""

from __future__ import annotations

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.core import Fault
from providers.sim.server import SimServer

SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 3, 24_000), "wav")  # three seconds
TRANSLATED = "This is a simulated English translation of 3.0 seconds of audio."

# The official client marks `audio.translations.create` deprecated (OpenAI: "supports only
# whisper-1; the endpoint and model are deprecated"); it still calls it as before.
pytestmark = pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def test_every_response_format(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.translations.with_raw_response.create(
        model="whisper-1", file=("a.wav", SILENCE_WAV)
    )
    assert response.headers["x-service-provider"] == "openai"
    assert response.parse().text == TRANSLATED
    text = await client.audio.translations.create(
        model="whisper-1", file=("a.wav", SILENCE_WAV), response_format="text"
    )
    assert str(text).strip() == TRANSLATED
    srt = str(
        await client.audio.translations.create(
            model="whisper-1", file=("a.wav", SILENCE_WAV), response_format="srt"
        )
    )
    assert srt.splitlines()[:3] == ["1", "00:00:00,000 --> 00:00:03,000", TRANSLATED]
    vtt = str(
        await client.audio.translations.create(
            model="whisper-1", file=("a.wav", SILENCE_WAV), response_format="vtt"
        )
    )
    assert vtt.splitlines()[0] == "WEBVTT" and "00:00:03.000" in vtt and TRANSLATED in vtt


async def test_verbose_json_says_translate_in_english(client: openai.AsyncOpenAI) -> None:
    raw = await client.audio.translations.with_raw_response.create(
        model="whisper-1",
        file=("a.wav", SILENCE_WAV),
        response_format="verbose_json",
        prompt="A booking.",
        temperature=0.2,
    )
    body = raw.http_response.json()
    assert body["task"] == "translate" and body["language"] == "english"
    assert body["text"] == TRANSLATED
    assert body["duration"] == pytest.approx(3.0, abs=0.01)
    assert body["segments"][0]["end"] == pytest.approx(3.0, abs=0.01)


async def test_gemini_is_asked_for_english(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.translations.with_raw_response.create(
        model="gemini-2.5-flash-transcribe", file=("a.wav", SILENCE_WAV)
    )
    assert response.headers["x-service-provider"] == "google"
    # The simulator answers the translation sentence only to an instruction to translate.
    assert response.parse().text == TRANSLATED


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("voxtral-mini-latest", "Voxtral models do not translate"),
        ("local-whisper-tiny-en", "English only"),
        ("gpt-4o-mini-transcribe", "whisper-1 only"),
    ],
)
async def test_models_that_do_not_translate_are_400s(
    client: openai.AsyncOpenAI, model: str, words: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.translations.create(model=model, file=("a.wav", SILENCE_WAV))
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "invalid_request" and error["param"] == "model"
    assert model in error["message"] and words in error["message"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("language", "fr"),
        ("timestamp_granularities[]", "word"),
        ("stream", "true"),
        ("diarize", "true"),
        ("context_bias", "Voxtral"),
    ],
)
async def test_transcription_only_fields_are_400s(
    client: openai.AsyncOpenAI, field: str, value: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.translations.create(
            model="whisper-1", file=("a.wav", SILENCE_WAV), extra_body={field: value}
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == field.removesuffix("[]")
    assert f"'{field.removesuffix('[]')}' is not a parameter of translations" in error["message"]


async def test_a_png_named_wav_and_an_empty_file_are_400s(client: openai.AsyncOpenAI) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 256
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.translations.create(model="whisper-1", file=("a.wav", png))
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "invalid_audio" and error["param"] == "file"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.translations.create(model="whisper-1", file=("a.wav", b""))
    error = caught.value.body
    assert isinstance(error, dict) and error["param"] == "file"


async def test_usage_record_and_fallback_to_gemini(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim_of(gateway).faults.add(Fault(model="whisper-1", status=503))
    response = await client.audio.translations.with_raw_response.create(
        model="whisper-1", file=("a.wav", SILENCE_WAV)
    )
    # whisper-1's catalog chain holds no translating model: the workspace's others follow.
    assert response.headers["x-service-fallback"] == "true"
    assert response.headers["x-service-provider"] == "google"
    assert response.headers["x-service-model"] == "gemini-2.5-flash-transcribe"
    assert response.parse().text == TRANSLATED
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT endpoint, provider, model, audio_seconds, cost_usd FROM usage_records "
                "WHERE endpoint LIKE 'audio.%' AND status = 200"
            )
        )
    )
    assert [(r["endpoint"], r["provider"]) for r in rows] == [("audio.translations", "google")]
    assert rows[0]["audio_seconds"] == pytest.approx(3.0, abs=0.01)
    assert rows[0]["cost_usd"] == pytest.approx(3.0 / 60 * 0.0024, rel=1e-2)


async def test_explicit_fallbacks_keep_only_translating_models(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim_of(gateway).faults.add(Fault(model="whisper-1", status=503))
    service = {"fallbacks": ["voxtral-mini-latest", "gemini-2.5-flash-lite-transcribe"]}
    response = await client.audio.translations.with_raw_response.create(
        model="whisper-1", file=("a.wav", SILENCE_WAV), extra_body={"service": service}
    )
    assert response.headers["x-service-provider"] == "google"
    assert response.headers["x-service-model"] == "gemini-2.5-flash-lite-transcribe"


async def test_auto_picks_a_translating_model(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.translations.with_raw_response.create(
        model="auto", file=("a.wav", SILENCE_WAV)
    )
    # By quality Voxtral (84) leads the transcription models; it does not translate.
    assert response.headers["x-service-model"] == "gemini-2.5-flash-transcribe"
    assert response.parse().text == TRANSLATED


async def test_a_key_without_the_audio_permission_is_refused(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    created = await http.post(
        "/v1/management/api-keys", json={"name": "chat only", "permissions": ["chat"]}
    )
    assert created.status_code in (200, 201), created.text
    response = await http.post(
        "/v1/audio/translations",
        files={"file": ("a.wav", SILENCE_WAV, "audio/wav")},
        data={"model": "whisper-1"},
        headers={"authorization": f"Bearer {created.json()['key']}"},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_permissions"
