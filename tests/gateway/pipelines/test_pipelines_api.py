"""POST /v1/audio/pipelines through real HTTP: the simulators' vendors and the local engines.

Spoken input is made by the gateway's own local synthesiser (eSpeak NG), so the test
knows what was said; the language model's answer is scripted on the simulator when the
test needs to know it.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import pytest
import soundfile

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from providers.sim.server import SimServer
from tests.gateway.audio.test_local_audio_api import overlap

PATH = "/v1/audio/pipelines"
SPOKEN = "The meeting has been moved to Thursday afternoon."
ANSWER = "Of course. I booked a table for two tomorrow at seven. Anything else?"


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def spoken_wav(http: httpx.AsyncClient, text: str = SPOKEN) -> bytes:
    response = await http.post(
        "/v1/audio/speech",
        json={
            "model": "local-espeak-ng",
            "voice": "professional",
            "input": text,
            "response_format": "wav",
        },
    )
    assert response.status_code == 200, response.text
    return response.content


def lines(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line]


async def local_template(http: httpx.AsyncClient, name: str = "local-agent") -> dict[str, Any]:
    response = await http.post(
        "/v1/management/pipeline-templates",
        json={
            "name": name,
            "stt": {"model": "local-whisper-tiny-en", "language": "en"},
            "llm": {"model": "gpt-4o-mini", "system_prompt": "Be brief.", "max_tokens": 60},
            "tts": {"model": "local-espeak-ng", "voice": "friendly"},
        },
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_spoken_wav_gives_a_transcript_an_answer_and_audio_on_the_local_engines(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await local_template(http)
    sim_of(gateway).replies.append(ANSWER)
    wav = await spoken_wav(http)
    response = await http.post(
        PATH,
        files={"audio": ("turn.wav", wav, "audio/wav")},
        data={"template": "local-agent"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert overlap(SPOKEN, result["transcription"]) >= 0.6
    assert result["response"] == ANSWER
    assert result["providers"] == {"stt": "local", "llm": "openai", "tts": "local"}
    assert result["audio_format"] == "mp3"
    audio = soundfile.info(io.BytesIO(base64.b64decode(result["audio"])))
    assert audio.format == "MP3" and audio.duration > 1.0
    usage = result["usage"]
    assert usage["stt_seconds"] == pytest.approx(soundfile.info(io.BytesIO(wav)).duration, abs=0.05)
    assert usage["llm_tokens"]["completion"] > 0 and usage["llm_tokens"]["prompt"] > 0
    assert usage["tts_characters"] == len(ANSWER) - 2  # the spaces between its 3 sentences
    assert set(result["latency"]) >= {"stt_ms", "llm_ms", "tts_ms", "total_ms"}
    assert result["latency"]["total_ms"] >= result["latency"]["stt_ms"]

    # Every stage left its own usage record: one recognition, one model call, a
    # synthesis per sentence.
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT provider, model, audio_seconds, characters, completion_tokens, status "
                "FROM usage_records WHERE endpoint = 'audio.pipelines' ORDER BY created_epoch"
            )
        )
    )
    models = [row["model"] for row in rows]
    assert models.count("local-whisper-tiny-en") == 1
    assert models.count("gpt-4o-mini") == 1
    assert models.count("local-espeak-ng") == 3
    assert all(row["status"] == 200 for row in rows)
    assert sum(row["characters"] or 0 for row in rows) == usage["tts_characters"]


async def test_a_streamed_pipeline_sends_its_events_in_overlapped_order(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).replies.append(ANSWER)
    wav = await spoken_wav(http)
    response = await http.post(
        PATH,
        json={
            "audio": base64.b64encode(wav).decode(),
            "template": "voice-agent-fast",
            "stream": True,
        },
        timeout=60,
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    events = lines(response)
    kinds = [e["type"] for e in events]
    final = kinds.index("transcription.final")
    assert all(k == "transcription.partial" for k in kinds[:final])
    pieces = "".join(e["text"] for e in events[:final])  # partials are pieces (README)
    assert pieces.strip() == events[final]["text"].strip()
    assert kinds.index("llm.token") == final + 1
    assert "audio.chunk" in kinds
    assert kinds.index("llm.done") < kinds.index("done") == len(kinds) - 1
    assert kinds[kinds.index("llm.done") + 1 :].count("llm.token") == 0
    tokens = "".join(e["token"] for e in events if e["type"] == "llm.token")
    assert tokens == ANSWER == events[kinds.index("llm.done")]["text"]
    audio = b"".join(base64.b64decode(e["data"]) for e in events if e["type"] == "audio.chunk")
    done = events[-1]
    # Streamed speech is one MP3 across the chunks (the template's format).
    assert (done["audio_format"], done["sample_rate"]) == ("mp3", 24_000)
    samples, rate = soundfile.read(io.BytesIO(audio), dtype="int16")
    assert len(samples) / rate > 1.0
    assert done["usage"]["tts_characters"] == len(ANSWER) - 2
    assert set(done["latency"]) >= {"stt_ms", "llm_ms", "tts_ms", "total_ms", "first_audio_ms"}


async def test_a_failing_stage_falls_back_with_a_recoverable_error_event(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).faults.add(Fault(model="gpt-4o-mini", status=500))
    wav = await spoken_wav(http)
    response = await http.post(
        PATH,
        files={"audio": ("turn.wav", wav, "audio/wav")},
        data={"template": "voice-agent-fast", "stream": "true"},
        timeout=60,
    )
    events = lines(response)
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["recoverable"] is True
    assert "openai" in errors[0]["message"]
    assert events[-1]["type"] == "done"


async def test_a_stage_nobody_can_serve_ends_the_stream_with_an_error(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    for model in (
        "gpt-4o-mini",
        "gemini-2.5-flash-lite",
        "claude-haiku-4-5",
        "mistral-small-latest",
    ):
        sim.faults.add(Fault(model=model, status=400, message="no"))
    wav = await spoken_wav(http)
    response = await http.post(
        PATH,
        files={"audio": ("turn.wav", wav, "audio/wav")},
        data={"template": "voice-agent-fast", "stream": "true"},
        timeout=60,
    )
    events = lines(response)
    assert events[-1]["type"] == "error" and events[-1]["recoverable"] is False
    assert "done" not in [e["type"] for e in events]
    whole = await http.post(
        PATH, files={"audio": ("turn.wav", wav, "audio/wav")}, data={"template": "voice-agent-fast"}
    )
    assert whole.status_code == 400
    assert whole.json()["error"]["message"]


async def test_a_vendor_failure_nobody_can_replace_is_a_500_provider_error(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """The spec's pipeline statuses list 500 (as speech and transcriptions), not 502."""
    sim = sim_of(gateway)
    for info in gateway.state.catalog.models(capability="chat"):
        sim.faults.add(Fault(model=info.upstream_id, status=500, message="down"))
    wav = await spoken_wav(http)
    whole = await http.post(
        PATH, files={"audio": ("turn.wav", wav, "audio/wav")}, data={"template": "voice-agent-fast"}
    )
    assert whole.status_code == 500, whole.text
    assert whole.json()["error"]["code"] == "provider_error"


@pytest.mark.parametrize(
    ("fields", "status", "code"),
    [
        ({"template": "no-such-template"}, 404, "template_not_found"),
        ({}, 400, "invalid_request"),
        ({"template": "voice-agent-fast", "stream": "maybe"}, 400, "invalid_request"),
        ({"template": "voice-agent-fast", "overrides": "{"}, 400, "invalid_request"),
        (
            {"template": "voice-agent-fast", "overrides": '{"llm": {"model": "tts-1"}}'},
            400,
            "invalid_request",
        ),
        (
            {"template": "voice-agent-fast", "overrides": '{"tts": {"voice": "nobody"}}'},
            400,
            "invalid_request",
        ),
        (
            {"template": "voice-agent-fast", "overrides": '{"tts": {"speed": 9}}'},
            400,
            "invalid_request",
        ),
        (
            {"template": "voice-agent-fast", "overrides": '{"llm": {"max_tokens": 0}}'},
            400,
            "invalid_request",
        ),
    ],
)
async def test_bad_parameters_are_refused_before_anything_runs(
    http: httpx.AsyncClient, fields: dict[str, str], status: int, code: str
) -> None:
    wav = await spoken_wav(http)
    response = await http.post(PATH, files={"audio": ("a.wav", wav, "audio/wav")}, data=fields)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


async def test_bad_audio_is_a_400_and_too_much_a_413(http: httpx.AsyncClient) -> None:
    not_audio = await http.post(
        PATH,
        files={"audio": ("a.wav", b"hello, I am text", "audio/wav")},
        data={"template": "voice-agent-fast"},
    )
    assert not_audio.status_code == 400
    assert not_audio.json()["error"]["code"] == "invalid_audio"
    assert not_audio.json()["error"]["param"] == "audio"
    bad_base64 = await http.post(PATH, json={"template": "voice-agent-fast", "audio": "%%%"})
    assert bad_base64.status_code == 400
    assert bad_base64.json()["error"]["code"] == "invalid_audio"
    text_as_base64 = await http.post(
        PATH, json={"template": "voice-agent-fast", "audio": base64.b64encode(b"hello").decode()}
    )
    assert text_as_base64.status_code == 400
    assert text_as_base64.json()["error"]["code"] == "invalid_audio"
    assert text_as_base64.json()["error"]["param"] == "audio"
    missing = await http.post(PATH, json={"template": "voice-agent-fast"})
    assert missing.status_code == 400
    assert missing.json()["error"]["param"] == "audio"
    large = b"\0" * (25 * 1024 * 1024 + 1)
    too_large = await http.post(
        PATH,
        files={"audio": ("a.wav", large, "audio/wav")},
        data={"template": "voice-agent-fast"},
        timeout=60,
    )
    assert too_large.status_code == 413
    # The spec's pipeline statuses have no 415: a body that is neither JSON nor
    # multipart lacks its audio, a 400.
    wrong_type = await http.post(PATH, content=b"x", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 400
    assert wrong_type.json()["error"]["param"] == "audio"


async def test_multipart_audio_may_be_a_base64_text_field(http: httpx.AsyncClient) -> None:
    """The spec's `audio` is "file or base64 string" in multipart as in JSON."""
    wav = await spoken_wav(http)
    fields = {"template": (None, "voice-agent-fast"), "stream": (None, "false")}
    response = await http.post(
        PATH, files=fields | {"audio": (None, base64.b64encode(wav).decode())}
    )
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["stt_seconds"] == pytest.approx(
        soundfile.info(io.BytesIO(wav)).duration, rel=0.05
    )
    not_base64 = await http.post(PATH, files=fields | {"audio": (None, "%%% not base64")})
    assert not_base64.status_code == 400, not_base64.text
    assert not_base64.json()["error"]["code"] == "invalid_audio"
    assert not_base64.json()["error"]["param"] == "audio"


async def test_a_pipeline_needs_a_key(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url) as anonymous:
        response = await anonymous.post(
            PATH, json={"template": "voice-agent-fast", "audio": "AA=="}
        )
    assert response.status_code == 401
