"""The pure cores of the audio family: input validation, rendering, planning, voices."""

from __future__ import annotations

import orjson
import pytest

from gateway.audio.input import parse_speech, parse_transcription, with_mapping_defaults
from gateway.audio.plan import VoiceChoice, ranked, resolve_voice
from gateway.audio.render import render_transcription, srt, vtt
from gateway.platform.errors import ApiError
from providers.audio_types import (
    Segment,
    SpeechRequest,
    TranscriptionResult,
    VoiceSettings,
    Word,
)
from providers.catalog import load_catalog
from providers.elevenlabs_speech import tts_payload
from providers.voices import load_voices

RESULT = TranscriptionResult(
    text="Hello there. General Kenobi.",
    language="en",
    duration_s=3725.5,
    segments=(
        Segment(0, 0.0, 1.2, "Hello there."),
        Segment(1, 3661.25, 3725.5, "General Kenobi.", speaker="speaker_2"),
    ),
    words=(Word("Hello", 0.0, 0.5), Word("there", 0.5, 1.2)),
)


def test_srt_and_vtt_cues() -> None:
    assert srt(RESULT.segments) == (
        "1\n00:00:00,000 --> 00:00:01,200\nHello there.\n\n"
        "2\n01:01:01,250 --> 01:02:05,500\n[speaker_2] General Kenobi.\n"
    )
    assert vtt(RESULT.segments).startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.200\n")


def test_verbose_json_follows_openai_shape() -> None:
    body = orjson.loads(render_transcription(RESULT, "verbose_json", ("word", "segment")))
    assert body["task"] == "transcribe" and body["language"] == "english"
    assert body["duration"] == 3725.5
    assert set(body["segments"][0]) == {
        "id",
        "seek",
        "start",
        "end",
        "text",
        "tokens",
        "temperature",
        "avg_logprob",
        "compression_ratio",
        "no_speech_prob",
    }
    assert body["words"][1] == {"word": "there", "start": 0.5, "end": 1.2}
    assert "words" not in orjson.loads(render_transcription(RESULT, "verbose_json", ()))
    words_only = orjson.loads(render_transcription(RESULT, "verbose_json", ("word",)))
    assert words_only["segments"] and words_only["words"]  # the spec lists both


def test_text_and_json() -> None:
    assert render_transcription(RESULT, "text", ()) == b"Hello there. General Kenobi.\n"
    assert orjson.loads(render_transcription(RESULT, "json", ())) == {"text": RESULT.text}


def test_speech_defaults_and_service() -> None:
    params = parse_speech(
        {
            "model": "tts-1",
            "input": "hi",
            "voice": "calm",
            "service": {
                "prefer": "speed",
                "voice_settings": {"stability": 0.3, "use_speaker_boost": False},
                "fallbacks": ["tts-1-hd"],
            },
        }
    )
    # Streamed by default, as OpenAI's speech is (issue 35).
    assert (params.response_format, params.speed, params.stream) == ("mp3", 1.0, True)
    assert params.stream_format == "audio"
    assert params.prefer == "speed" and params.service.fallbacks == ("tts-1-hd",)
    assert params.voice_settings is not None and params.voice_settings.stability == 0.3
    assert params.voice_settings.use_speaker_boost is False


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"speed": 0.1}, "speed"),
        ({"speed": True}, "speed"),
        ({"input": ""}, "input"),
        ({"stream": "yes"}, "stream"),
        ({"service": {"prefer": "fastest"}}, "service.prefer"),
        ({"service": {"voice_settings": {"style": 2}}}, "service.voice_settings.style"),
        (
            {"service": {"voice_settings": {"use_speaker_boost": "yes"}}},
            "service.voice_settings.use_speaker_boost",
        ),
    ],
)
def test_speech_bounds(change: dict[str, object], param: str) -> None:
    body = {"model": "tts-1", "input": "hi", "voice": "calm", **change}
    with pytest.raises(ApiError) as caught:
        parse_speech(body)
    assert caught.value.status == 400 and caught.value.extra["param"] == param


def test_transcription_form_fields() -> None:
    params = parse_transcription(
        {
            "model": ["whisper-1"],
            "response_format": ["verbose_json"],
            "timestamp_granularities[]": ["word", "segment"],
            "temperature": ["0.2"],
            "language": ["en"],
            "stream": ["false"],
            "service[prefer]": ["cost"],
            "service[fallbacks][]": ["voxtral-mini-latest", "whisper-1"],
        }
    )
    assert params.granularities == ("word", "segment") and params.words
    assert params.temperature == 0.2 and params.prefer == "cost"
    assert params.service.fallbacks == ("voxtral-mini-latest", "whisper-1")
    as_json = parse_transcription({"model": ["whisper-1"], "service": ['{"prefer": "quality"}']})
    assert as_json.prefer == "quality"


@pytest.mark.parametrize(
    ("form", "param"),
    [
        ({"language": ["english"]}, "language"),
        ({"temperature": ["1.5"]}, "temperature"),
        ({"timestamp_granularities[]": ["word"]}, "timestamp_granularities"),
        ({"response_format": ["xml"]}, "response_format"),
        ({"service": ["{not json"]}, "service"),
    ],
)
def test_transcription_bounds(form: dict[str, list[str]], param: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_transcription({"model": ["whisper-1"], **form})
    assert caught.value.extra["param"] == param


def test_auto_ranking_by_preference() -> None:
    catalog = load_catalog()
    active = frozenset({"openai", "elevenlabs"})
    by_quality = [t.model_id for t in ranked(catalog, active, "speech", "quality")]
    assert by_quality[0] == "eleven_multilingual_v2"
    by_cost = [t.model_id for t in ranked(catalog, active, "speech", "cost")]
    # OpenAI's speech models shut down on 2027-01-06: deprecated, `auto` passes them by.
    assert by_cost[0] == "eleven_turbo_v2_5" and "tts-1" not in by_cost
    assert "local-espeak-ng" not in by_quality  # local is appended last by the plan


def test_voice_resolution() -> None:
    voices = load_voices()
    standard = resolve_voice(voices, "calm", None)
    assert standard.for_provider("elevenlabs") == "21m00Tcm4TlvDq8ikWAM"
    vendor_voice = resolve_voice(voices, "onyx", None)  # OpenAI's serious voice
    assert vendor_voice.for_provider("openai") == "onyx"
    assert vendor_voice.for_provider("google") == "Kore"
    mapped = resolve_voice(voices, "brand", {"openai": "nova"})
    assert mapped == VoiceChoice({"openai": "nova"})
    assert mapped.for_provider("elevenlabs") is None and mapped.for_provider("local") == "en-us"
    cloned = resolve_voice(voices, "myClonedVoiceId", None)
    assert cloned.for_provider("elevenlabs") == "myClonedVoiceId"


def test_voice_settings_reach_elevenlabs_with_speaker_boost() -> None:
    params = parse_speech(
        {
            "model": "eleven_flash_v2_5",
            "input": "hi",
            "voice": "calm",
            "service": {"voice_settings": {"stability": 0.2, "use_speaker_boost": False}},
        }
    )
    request = SpeechRequest(
        "eleven_flash_v2_5", "hi", "21m00Tcm4TlvDq8ikWAM", voice_settings=params.voice_settings
    )
    assert tts_payload(request)["voice_settings"] == {"stability": 0.2, "use_speaker_boost": False}


def test_a_mappings_defaults_fill_only_what_the_request_left_out() -> None:
    defaults = {"speed": 1.5, "stability": 0.2}
    bare = with_mapping_defaults(
        parse_speech({"model": "m", "input": "hi", "voice": "v"}), defaults
    )
    assert bare.speed == 1.5 and bare.voice_settings == VoiceSettings(stability=0.2)
    given = with_mapping_defaults(
        parse_speech(
            {
                "model": "m",
                "input": "hi",
                "voice": "v",
                "speed": 1.0,
                "service": {"voice_settings": {"stability": 0.9}},
            }
        ),
        defaults,
    )
    assert given.speed == 1.0 and given.voice_settings == VoiceSettings(stability=0.9)
    nothing = with_mapping_defaults(parse_speech({"model": "m", "input": "hi", "voice": "v"}), {})
    assert nothing.speed == 1.0 and nothing.voice_settings is None


@pytest.mark.parametrize("value", ["word,segment", '["word", "segment"]', "word, segment"])
def test_granularities_as_one_form_value(value: str) -> None:
    params = parse_transcription(
        {
            "model": ["whisper-1"],
            "response_format": ["verbose_json"],
            "timestamp_granularities": [value],
        }
    )
    assert params.granularities == ("word", "segment")
