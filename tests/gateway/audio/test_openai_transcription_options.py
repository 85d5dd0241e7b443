"""OpenAI's current transcription form through the official `openai` client (issue 36):
every field is honoured or refused, never dropped. `gpt-4o-transcribe-diarize` answers
`diarized_json` (whole and streamed), `include[]=logprobs` gives the gpt-4o models'
logprobs, `keywords[]`/`languages[]` reach gpt-transcribe, `chunking_strategy` the gpt-4o
models; a model that cannot honour one is a 400 `unsupported_parameter` naming it before
any upstream call, and a field no transcription has is a 400 naming it."""

from __future__ import annotations

import base64
import re
from typing import Any

import openai
import pytest

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.server import SimServer

SHORT_WAV = encode(Pcm(b"\0\0" * 8_000 * 2, 8_000), "wav")  # two seconds
LONG_FLAC = encode(Pcm(b"\0\0" * 8_000 * 31, 8_000), "flac")  # over the 30 s unchunked limit
REFERENCE = "data:audio/wav;base64," + base64.b64encode(SHORT_WAV).decode()
DIARIZE = "gpt-4o-transcribe-diarize"


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


def sent_fields(gateway: RunningGateway) -> dict[str, list[str]]:
    """The text parts of the last transcription form the simulated OpenAI received."""
    last = [r for r in sim_of(gateway).requests if r.path.endswith("/audio/transcriptions")][-1]
    assert last.raw is not None
    found: dict[str, list[str]] = {}
    pattern = rb'name="([^"]+)"\r\n\r\n(.*?)\r\n--'
    for name, value in re.findall(pattern, last.raw, re.DOTALL):
        found.setdefault(name.decode(), []).append(value.decode())
    return found


def error_of(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> dict[str, Any]:
    body = caught.value.body
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize("name", ["colour", "languag", "timestamp_granularity[]"])
async def test_a_field_no_transcription_has_is_refused_by_name(
    gateway: RunningGateway, client: openai.AsyncOpenAI, name: str
) -> None:
    sent = len(sim_of(gateway).requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model="gpt-4o-transcribe", file=("a.wav", SHORT_WAV), extra_body={name: "x"}
        )
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("invalid_request", name.removesuffix("[]"))
    assert "Unrecognized request argument" in error["message"]
    assert len(sim_of(gateway).requests) == sent


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # translations.create
async def test_a_translation_refuses_the_transcription_only_fields(
    client: openai.AsyncOpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.translations.create(
            model="whisper-1", file=("a.wav", SHORT_WAV), extra_body={"include": ["logprobs"]}
        )
    assert error_of(caught)["param"] == "include"


async def test_diarized_json_from_the_diarizing_model(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.audio.transcriptions.create(
        model=DIARIZE, file=("a.wav", SHORT_WAV), response_format="diarized_json"
    )
    assert isinstance(answer, openai.types.audio.TranscriptionDiarized)
    assert [s.speaker for s in answer.segments] == ["A", "B"]
    assert {s.type for s in answer.segments} == {"transcript.text.segment"}
    assert " ".join(s.text for s in answer.segments) == answer.text
    assert answer.duration == pytest.approx(2.0)
    assert sent_fields(gateway)["response_format"] == ["diarized_json"]


async def test_known_speakers_name_the_segments(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.audio.transcriptions.create(
        model=DIARIZE,
        file=("a.wav", SHORT_WAV),
        response_format="diarized_json",
        known_speaker_names=["agent", "customer"],
        known_speaker_references=[REFERENCE, REFERENCE],
    )
    assert [s.speaker for s in answer.segments] == ["agent", "customer"]
    assert sent_fields(gateway)["known_speaker_references[]"] == [REFERENCE, REFERENCE]


async def test_known_speakers_need_one_data_url_each(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model=DIARIZE,
            file=("a.wav", SHORT_WAV),
            known_speaker_names=["agent"],
            known_speaker_references=["https://example.com/agent.wav"],
        )
    assert error_of(caught)["param"] == "known_speaker_references"


async def test_each_known_speaker_needs_one_reference(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model=DIARIZE,
            file=("a.wav", SHORT_WAV),
            known_speaker_names=["agent", "customer"],
            known_speaker_references=[REFERENCE],
        )
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("invalid_known_speakers", "known_speaker_references")


async def test_streamed_diarized_json_is_segment_events_then_done(
    client: openai.AsyncOpenAI,
) -> None:
    stream = await client.audio.transcriptions.create(
        model=DIARIZE, file=("a.wav", SHORT_WAV), response_format="diarized_json", stream=True
    )
    events = [event async for event in stream]
    assert [e.type for e in events] == [
        "transcript.text.segment",
        "transcript.text.segment",
        "transcript.text.done",
    ]
    assert [getattr(e, "speaker", None) for e in events[:2]] == ["A", "B"]


async def test_diarize_true_asks_the_diarizing_model_for_speakers(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.audio.transcriptions.create(
        model=DIARIZE,
        file=("a.wav", SHORT_WAV),
        response_format="verbose_json",
        extra_body={"diarize": "true"},
    )
    assert [s.model_extra and s.model_extra["speaker"] for s in answer.segments or ()] == [
        "A",
        "B",
    ]
    assert sent_fields(gateway)["response_format"] == ["diarized_json"]


async def test_voxtral_answers_diarized_json_from_its_speaker_segments(
    client: openai.AsyncOpenAI,
) -> None:
    answer = await client.audio.transcriptions.create(
        model="voxtral-mini-latest", file=("a.wav", SHORT_WAV), response_format="diarized_json"
    )
    assert [s.speaker for s in answer.segments] == ["speaker_1", "speaker_2"]


async def test_long_audio_without_chunking_is_refused_for_the_diarizing_model(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sent = len(sim_of(gateway).requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(model=DIARIZE, file=("a.flac", LONG_FLAC))
    error = error_of(caught)
    assert (error["code"], error["param"]) == ("chunking_required", "chunking_strategy")
    assert len(sim_of(gateway).requests) == sent


@pytest.mark.parametrize(
    ("strategy", "parts"),
    [
        ("auto", {"chunking_strategy": ["auto"]}),
        (
            {"type": "server_vad", "threshold": 0.4, "silence_duration_ms": 300},
            {
                "chunking_strategy[type]": ["server_vad"],
                "chunking_strategy[silence_duration_ms]": ["300"],
                "chunking_strategy[threshold]": ["0.4"],
            },
        ),
    ],
)
async def test_chunking_strategy_reaches_the_vendor(
    gateway: RunningGateway, client: openai.AsyncOpenAI, strategy: Any, parts: dict[str, Any]
) -> None:
    answer = await client.audio.transcriptions.create(
        model=DIARIZE, file=("a.flac", LONG_FLAC), chunking_strategy=strategy
    )
    assert "31.0 seconds" in answer.text
    fields = sent_fields(gateway)
    assert {name: fields[name] for name in parts} == parts


async def test_logprobs_from_the_gpt_4o_models(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe", file=("a.wav", SHORT_WAV), include=["logprobs"]
    )
    assert answer.logprobs is not None
    assert "".join(p.token or "" for p in answer.logprobs) == answer.text
    assert all(p.logprob is not None and p.logprob < 0 for p in answer.logprobs)
    assert sent_fields(gateway)["include[]"] == ["logprobs"]


async def test_streamed_logprobs_come_with_the_done_event(client: openai.AsyncOpenAI) -> None:
    stream = await client.audio.transcriptions.create(
        model="gpt-4o-transcribe", file=("a.wav", SHORT_WAV), include=["logprobs"], stream=True
    )
    done = [event async for event in stream][-1]
    assert done.type == "transcript.text.done"
    assert done.logprobs and "".join(p.token or "" for p in done.logprobs) == done.text


async def test_logprobs_need_the_json_format(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model="gpt-4o-transcribe",
            file=("a.wav", SHORT_WAV),
            include=["logprobs"],
            response_format="text",
        )
    assert (error_of(caught)["code"], error_of(caught)["param"]) == ("invalid_request", "include")


async def test_keywords_and_languages_reach_gpt_transcribe(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.audio.transcriptions.create(
        model="gpt-transcribe",
        file=("a.wav", SHORT_WAV),
        keywords=["Ada", "Grace"],
        languages=["en", "fr"],
    )
    assert answer.text.endswith("Keywords: Ada, Grace.")
    assert sent_fields(gateway)["languages[]"] == ["en", "fr"]


async def test_keywords_reach_voxtral_as_its_context_bias(client: openai.AsyncOpenAI) -> None:
    answer = await client.audio.transcriptions.create(
        model="voxtral-mini-latest", file=("a.wav", SHORT_WAV), keywords=["Ada", "Grace"]
    )
    assert "Ada" in answer.text and "Grace" in answer.text
