"""The ambient scribe and legal dictation through HTTP, with scripted transcripts and
model answers on the simulator (so the test knows what was heard and what was said)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from gateway.app.server import RunningGateway
from providers.sim.server import SimServer
from tests.gateway.pipelines.test_pipelines_api import PATH, lines, sim_of, spoken_wav

ENCOUNTER = (
    "Patient reports chest pain for three days. Date of birth 03/04/1975. "
    "You can reach me at john.smith@example.com. I take lisinopril and I am allergic "
    "to penicillin. Blood pressure today is 150 over 95."
)
NOTE = {
    "chief_complaint": "chest pain",
    "duration": "three days",
    "symptoms": ["chest pain"],
    "medications_mentioned": ["lisinopril"],
    "allergies_mentioned": ["penicillin"],
    "vital_signs": {"blood_pressure": "150/95"},
}


def scripted(gateway: RunningGateway, transcript: str, reply: str) -> SimServer:
    sim = sim_of(gateway)
    sim.transcripts.append(transcript)
    sim.replies.append(reply)
    return sim


async def scribe(http: httpx.AsyncClient, **fields: str) -> httpx.Response:
    wav = await spoken_wav(http, "Good morning.")
    return await http.post(
        PATH,
        files={"audio": ("visit.wav", wav, "audio/wav")},
        data={"template": "ambient-scribe", **fields},
        timeout=60,
    )


async def test_the_scribe_returns_a_validated_note_redacted_pii_and_an_audit_event(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    scripted(gateway, ENCOUNTER, json.dumps(NOTE))
    response = await scribe(http)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["transcription"] == ENCOUNTER
    assert result["structured_note"] == NOTE
    found = {f["type"]: f for f in result["pii_detected"]}
    assert found["email"]["value"] == "j***.*****@*******.**m"
    assert "date_of_birth" in found
    assert all(0 < f["confidence"] <= 1 for f in result["pii_detected"])
    assert "john.smith" not in response.text.replace(ENCOUNTER, "")
    # The vendors that heard the visit are not covered by an agreement: not HIPAA.
    assert result["compliance"] == {"hipaa": False, "audit_logged": True}
    assert "audio" not in result and "response" not in result

    log = (await http.get("/v1/management/audit-log")).json()
    events = log.get("data") or log.get("events")
    event = next(e for e in events if e["id"] == result["audit_id"])
    assert event["type"] == "pipeline.scribe_note"
    assert event["details"]["pii_count"] == len(result["pii_detected"])
    assert "john.smith@example.com" not in json.dumps(event)


async def test_hipaa_is_true_only_when_every_stage_is_covered(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    configured = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"hipaa_baa": True}}
    )
    assert configured.status_code == 200, configured.text
    scripted(gateway, ENCOUNTER, json.dumps(NOTE))
    result = (await scribe(http)).json()
    assert result["providers"]["stt"] == result["providers"]["llm"] == "openai"
    assert result["compliance"] == {"hipaa": True, "audit_logged": True}


async def test_a_note_off_its_schema_is_a_provider_error(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    scripted(gateway, ENCOUNTER, json.dumps(NOTE | {"symptoms": "chest pain"}))
    whole = await scribe(http)
    assert whole.status_code == 502
    assert whole.json()["error"]["code"] == "invalid_model_output"
    scripted(gateway, ENCOUNTER, "The patient has chest pain.")
    events = lines(await scribe(http, stream="true"))
    assert events[-1]["type"] == "error" and events[-1]["recoverable"] is False


async def test_without_a_script_the_model_still_answers_in_the_schema(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim_of(gateway).transcripts.append(ENCOUNTER)
    result: dict[str, Any] = (await scribe(http)).json()
    assert set(result["structured_note"]) == set(NOTE)


async def test_dictation_applies_spoken_commands_and_formats_the_document(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    scripted(
        gateway,
        "Dear counsel, comma, new paragraph. we write regarding section 4 of the lease period",
        "the tenant shall pay rent monthly under section 4\n\n"
        "The landlord shall maintain the premises.",
    )
    wav = await spoken_wav(http, "Dear counsel.")
    response = await http.post(
        PATH,
        files={"audio": ("memo.wav", wav, "audio/wav")},
        data={"template": "legal-dictation"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["transcription"] == "Dear counsel,\n\nWe write regarding section 4 of the lease."
    assert result["response"] == (
        "1. The tenant shall pay rent monthly under \u00a7 4.\n\n"
        "2. The landlord shall maintain the premises."
    )
    assert result["audio"] is None and result["audio_format"] is None
