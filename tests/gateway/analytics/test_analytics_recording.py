"""Requests refused before any provider answered them leave a usage record (status, error
code, endpoint, key, workspace; no units), so the analytics' error rates are true: a chat
body the gateway rejects (400, an `invalid_request`), and limits refusing OCR and voice
pipelines (429, a `rate_limit`)."""

from __future__ import annotations

import io
from typing import Any

import httpx
import numpy as np
import openai
import pytest
import soundfile

from gateway.app.server import RunningGateway
from tests.gateway import documents
from tests.gateway.pipelines.test_pipelines_api import PATH as PIPELINES
from tests.gateway.pipelines.test_pipelines_api import local_template

A = "/v1/management/analytics"
HELLO: Any = [{"role": "user", "content": "Say hello to analytics"}]


async def _records(gateway: RunningGateway, endpoint: str) -> list[dict[str, Any]]:
    await gateway.state.usage.flush()
    return await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT key_id, workspace_id, model, provider, status, error_code, "
                "prompt_tokens, completion_tokens, pages, cost_usd FROM usage_records "
                "WHERE endpoint = ? ORDER BY created_epoch",
                [endpoint],
            )
        )
    )


def _silence() -> bytes:
    out = io.BytesIO()
    soundfile.write(out, np.zeros(16_000, dtype=np.int16), 16_000, format="WAV")
    return out.getvalue()


async def _one_a_minute_key(http: httpx.AsyncClient) -> dict[str, Any]:
    created = await http.post(
        "/v1/management/api-keys",
        json={"name": "one-a-minute", "type": "prod", "rate_limits": {"rpm": 1}},
    )
    assert created.status_code == 201, created.text
    key: dict[str, Any] = created.json()
    return key


async def test_a_rejected_chat_body_counts_as_an_invalid_request(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, temperature=7)
    code = caught.value.code
    rows = await _records(gateway, "chat")
    assert [(r["status"], r["error_code"]) for r in rows] == [(200, None), (400, code)]
    refused = rows[1]
    assert refused["model"] == "gpt-4o-mini" and refused["provider"] == ""
    assert refused["workspace_id"] == rows[0]["workspace_id"]
    assert refused["key_id"] == rows[0]["key_id"]
    assert (refused["prompt_tokens"], refused["completion_tokens"], refused["cost_usd"]) == (
        0,
        0,
        0.0,
    )
    errors = (await http.get(f"{A}/errors")).json()
    assert errors["requests"] == 2 and errors["total_errors"] == 1
    assert errors["by_type"]["invalid_request"] == 1 and errors["error_rate"] == 0.5
    # Answered by the gateway itself: named so on every page, never under an empty key.
    assert errors["by_provider"]["gateway"]["total_errors"] == 1
    assert set(errors["by_provider"]) == {"gateway", "openai"}
    models = (await http.get(f"{A}/usage/models")).json()["models"]
    assert sorted(m["provider"] for m in models) == ["gateway", "openai"]
    for page in ("costs", "performance"):
        assert "" not in (await http.get(f"{A}/{page}")).json()["by_provider"]
    grouped = (await http.get(f"{A}/usage", params={"group_by": "provider"})).json()
    assert {p["provider"] for p in grouped["data"]} == {"gateway", "openai"}


async def test_an_ocr_request_refused_by_a_limit_is_recorded(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await _one_a_minute_key(http)
    image = documents.text_image(["Invoice 4711"])
    headers = {"authorization": f"Bearer {key['key']}"}
    for expected in (200, 429):
        answer = await http.post(
            "/v1/ocr",
            files={"file": ("scan.png", image)},
            data={"model": "local"},
            headers=headers,
            timeout=60,
        )
        assert answer.status_code == expected, answer.text
    rows = await _records(gateway, "ocr")
    assert [(r["key_id"], r["status"]) for r in rows] == [(key["id"], 200), (key["id"], 429)]
    assert rows[1]["error_code"] == answer.json()["error"]["code"]
    assert rows[1]["pages"] == 0 and rows[1]["cost_usd"] == 0.0
    keys = (await http.get(f"{A}/usage/api-keys")).json()["api_keys"]
    (mine,) = [k for k in keys if k["key_id"] == key["id"]]
    assert (mine["requests"], mine["rate_limit_hits"]) == (2, 1)


async def test_a_pipeline_refused_by_a_limit_is_recorded(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await local_template(http)
    key = await _one_a_minute_key(http)
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key=key["key"], max_retries=0
    ) as own:
        await own.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    refused = await http.post(
        PIPELINES,
        files={"audio": ("turn.wav", _silence(), "audio/wav")},
        data={"template": "local-agent"},
        headers={"authorization": f"Bearer {key['key']}"},
    )
    assert refused.status_code == 429, refused.text
    rows = await _records(gateway, "audio.pipelines")
    assert [(r["key_id"], r["status"], r["model"]) for r in rows] == [
        (key["id"], 429, "gpt-4o-mini")
    ]
    assert rows[0]["error_code"] == refused.json()["error"]["code"]


async def test_an_embeddings_request_for_an_unknown_model_is_recorded(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.embeddings.create(model="no-such-embedder", input="hello")
    rows = await _records(gateway, "embeddings")
    assert [(r["status"], r["error_code"], r["model"]) for r in rows] == [
        (404, caught.value.code, "no-such-embedder")
    ]
    errors = (await http.get(f"{A}/errors")).json()
    assert errors["by_type"]["invalid_request"] == 1


async def test_invalid_requests_of_every_endpoint_are_recorded_once(
    gateway: RunningGateway, client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    # One client mistake per family, each refused before any provider is asked: each must
    # leave exactly one record under its endpoint, and the errors page counts them all.
    with pytest.raises(openai.BadRequestError):
        await client.audio.transcriptions.create(
            model="whisper-1", file=("a.wav", b"RIFF but not audio at all")
        )
    with pytest.raises(openai.BadRequestError):
        await client.audio.speech.create(model="tts-1", voice="alloy", input="")
    answers = [
        await http.post(
            "/v1/ocr",
            files={"file": ("scan.png", documents.text_image(["Invoice 4711"]))},
            data={"model": "local", "pages": "7-9"},
            timeout=60,
        ),
        await http.post(
            PIPELINES,
            files={"audio": ("turn.wav", _silence(), "audio/wav")},
            data={"template": "no-such-template"},
        ),
        await http.post(
            "/v1/files", files={"file": ("a.txt", b"hello")}, data={"purpose": "nonsense"}
        ),
    ]
    assert [a.status_code for a in answers] == [400, 404, 400], [a.text for a in answers]
    expected = {
        "audio.transcriptions": (400, "whisper-1"),
        "audio.speech": (400, "tts-1"),
        "ocr": (400, ""),
        "audio.pipelines": (404, ""),
        "files": (400, ""),
    }
    for endpoint, (status, model) in expected.items():
        rows = await _records(gateway, endpoint)
        found = [(r["status"], r["model"], r["cost_usd"]) for r in rows]
        assert found == [(status, model, 0.0)], endpoint
        assert rows[0]["error_code"]
    errors = (await http.get(f"{A}/errors")).json()
    assert errors["requests"] == errors["total_errors"] == 5
    assert errors["by_type"]["invalid_request"] == 5
