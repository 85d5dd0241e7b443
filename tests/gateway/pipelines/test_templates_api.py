"""Custom pipeline templates through the management API: validated, per workspace,
audited, and usable by name or id in `POST /v1/audio/pipelines`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from gateway.pipelines.templates import builtin_templates
from tests.gateway.test_routing_rules_api import key_in

T = "/v1/management/pipeline-templates"
BODY: dict[str, Any] = {
    "name": "concierge",
    "description": "hotel front desk",
    "stt": {"model": "gpt-4o-mini-transcribe", "language": "en"},
    "llm": {
        "model": "gpt-4o-mini",
        "system_prompt": "You are a concierge.",
        "max_tokens": 120,
        "temperature": 0.5,
    },
    "tts": {"model": "tts-1", "voice": "calm"},
}


async def audit_types(http: httpx.AsyncClient) -> list[str]:
    log = (await http.get("/v1/management/audit-log")).json()
    events = log.get("data") or log.get("events") or []
    return [e["type"] for e in events]


async def test_create_read_list_update_delete(http: httpx.AsyncClient) -> None:
    created = await http.post(T, json=BODY)
    assert created.status_code == 201, created.text
    record = created.json()
    assert record["id"].startswith("pt_")
    assert record["name"] == "concierge" and record["builtin"] is False
    assert record["kind"] == "agent"
    assert record["stt"] == {"model": "gpt-4o-mini-transcribe", "language": "en"}
    assert record["llm"]["max_tokens"] == 120 and record["llm"]["temperature"] == 0.5
    assert record["tts"] == {"model": "tts-1", "voice": "calm", "speed": 1.0, "format": "mp3"}
    assert record["created_at"]

    listed = (await http.get(T)).json()
    ids = [t["id"] for t in listed["data"]]
    assert ids[: len(builtin_templates())] == list(builtin_templates())
    assert record["id"] in ids

    assert (await http.get(f"{T}/{record['id']}")).json() == record
    builtin = (await http.get(f"{T}/ambient-scribe")).json()
    assert builtin["builtin"] is True and builtin["kind"] == "scribe" and builtin["tts"] is None

    changed = await http.patch(
        f"{T}/{record['id']}", json={"llm": {"model": "gpt-4o", "max_tokens": 50}}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["llm"]["model"] == "gpt-4o"
    assert changed.json()["tts"] == record["tts"]  # untouched

    deleted = await http.delete(f"{T}/{record['id']}")
    assert deleted.json() == {"id": record["id"], "object": "pipeline_template", "deleted": True}
    assert (await http.get(f"{T}/{record['id']}")).status_code == 404
    assert (await http.delete(f"{T}/{record['id']}")).status_code == 404

    types = await audit_types(http)
    for kind in (
        "pipeline_template.created",
        "pipeline_template.updated",
        "pipeline_template.deleted",
    ):
        assert kind in types


@pytest.mark.parametrize(
    ("change", "status", "code", "param"),
    [
        ({"stt": {"model": "no-such-model"}}, 422, "invalid_model", "stt.model"),
        ({"stt": {"model": "gpt-4o-mini"}}, 422, "invalid_model", "stt.model"),
        ({"llm": {"model": "tts-1"}}, 422, "invalid_model", "llm.model"),
        ({"tts": {"model": "whisper-1", "voice": "calm"}}, 422, "invalid_model", "tts.model"),
        ({"tts": {"model": "tts-1", "voice": "no-such-voice"}}, 422, "invalid_voice", "tts.voice"),
        ({"tts": {"model": "tts-1"}}, 400, "invalid_request", "tts.voice"),
        (
            {"tts": {"model": "tts-1", "voice": "calm", "speed": 9}},
            400,
            "invalid_request",
            "tts.speed",
        ),
        ({"llm": {"model": "gpt-4o", "max_tokens": 0}}, 400, "invalid_request", "llm.max_tokens"),
        ({"llm": {"model": "gpt-4o", "temperature": 3}}, 400, "invalid_request", "llm.temperature"),
        ({"name": ""}, 400, "invalid_request", "name"),
        ({"name": "voice-agent-fast"}, 409, "template_name_taken", "name"),
        ({"colour": "blue"}, 400, "invalid_request", "colour"),
    ],
)
async def test_invalid_templates_are_refused_and_nothing_is_stored(
    http: httpx.AsyncClient, change: dict[str, Any], status: int, code: str, param: str
) -> None:
    response = await http.post(T, json=BODY | change)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert [t for t in (await http.get(T)).json()["data"] if not t["builtin"]] == []


async def test_names_are_unique_and_built_ins_are_read_only(http: httpx.AsyncClient) -> None:
    assert (await http.post(T, json=BODY)).status_code == 201
    again = await http.post(T, json=BODY)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "template_name_taken"
    for refused in (
        await http.delete(f"{T}/voice-agent-fast"),
        await http.patch(f"{T}/voice-agent-fast", json={"name": "x"}),
    ):
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "builtin_template"


async def test_a_change_to_a_taken_name_is_refused_and_changes_nothing(
    http: httpx.AsyncClient,
) -> None:
    first = (await http.post(T, json=BODY)).json()
    second = (await http.post(T, json=BODY | {"name": "bellhop"})).json()
    for method in ("PATCH", "PUT"):
        body = {"name": "concierge"} if method == "PATCH" else BODY
        refused = await http.request(method, f"{T}/{second['id']}", json=body)
        assert refused.status_code == 409, refused.text
        assert (refused.json()["error"]["code"], refused.json()["error"]["param"]) == (
            "template_name_taken",
            "name",
        )
    assert (await http.get(f"{T}/{second['id']}")).json() == second
    assert (await http.get(f"{T}/{first['id']}")).json() == first
    assert "pipeline_template.updated" not in await audit_types(http)


async def test_a_built_in_or_unknown_template_is_refused_before_its_body_is_read(
    http: httpx.AsyncClient,
) -> None:
    broken = {"content": b"{not json", "headers": {"content-type": "application/json"}}
    builtin = await http.patch(f"{T}/voice-agent-fast", **broken)
    assert (builtin.status_code, builtin.json()["error"]["code"]) == (400, "builtin_template")
    unknown = await http.put(f"{T}/pt_missing", **broken)
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "template_not_found")


async def test_a_voice_mapping_is_a_voice_for_templates(http: httpx.AsyncClient) -> None:
    mapping = await http.post(
        "/v1/management/voice-mappings",
        json={
            "name": "house-voice",
            "mappings": {"openai": "alloy", "elevenlabs": "21m00Tcm4TlvDq8ikWAM"},
        },
    )
    assert mapping.status_code == 201, mapping.text
    body = BODY | {"tts": {"model": "tts-1", "voice": "house-voice"}}
    assert (await http.post(T, json=body)).status_code == 201


async def test_a_patch_changes_only_the_stage_fields_it_names(http: httpx.AsyncClient) -> None:
    record = (await http.post(T, json=BODY)).json()
    changed = await http.patch(f"{T}/{record['id']}", json={"llm": {"max_tokens": 60}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["llm"] == record["llm"] | {"max_tokens": 60}
    voice = await http.patch(f"{T}/{record['id']}", json={"tts": {"voice": "serious"}})
    assert voice.json()["tts"] == record["tts"] | {"voice": "serious"}
    bad = await http.patch(f"{T}/{record['id']}", json={"llm": {"temperature": 3}})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "llm.temperature"
    # A PUT replaces: a stage given in part is still refused.
    put = await http.put(f"{T}/{record['id']}", json=BODY | {"llm": {"max_tokens": 60}})
    assert put.status_code == 400 and put.json()["error"]["param"] == "llm.model"


async def test_a_foreign_template_answers_like_an_unknown_one(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    mine = (await http.post(T, json=BODY)).json()
    other_key, _ = await key_in(gateway, "ws_other", "admin", ["management", "audio"])
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {other_key}"}, timeout=30
    ) as other:
        listed = (await other.get(T)).json()["data"]
        assert [t for t in listed if not t["builtin"]] == []
        for method in ("GET", "PATCH", "DELETE"):
            response = await other.request(method, f"{T}/{mine['id']}", json={"name": "y"})
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "template_not_found"
        for template in (mine["id"], mine["name"]):
            run = await other.post(
                "/v1/audio/pipelines", json={"template": template, "audio": "UklGRg=="}
            )
            assert run.status_code == 404, run.text
            assert run.json()["error"]["code"] == "template_not_found"
