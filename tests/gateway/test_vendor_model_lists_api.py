"""The vendors' current models through the official `openai` client (issue 36 point 4): a
sample of each new family is served by the simulators, named bare or `provider/model`;
dated snapshots resolve to their model; a retired id is a 404 that says when it went and
what replaces it; a model with an announced shutdown says so in its answer's headers."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog

HELLO: Any = [{"role": "user", "content": "Hello"}]
SKIP: Any = {"service": {"cache": "skip"}}


def sent_model(gateway: RunningGateway, vendor: str) -> Any:
    assert gateway.sim is not None
    return [r.body for r in gateway.sim.requests if r.vendor == vendor][-1]["model"]


@pytest.mark.parametrize(
    "model",
    [
        "gpt-6.2-astra",
        "openai/gpt-6.1-terra",
        "gpt-6-luna",
        "openai/gpt-5.6-sol",
        "gpt-5.2-pro",
        "claude-fable-5-1",
        "anthropic/claude-opus-5",
        "claude-sonnet-4-6",
        "anthropic/claude-opus-4-8",
    ],
)
async def test_a_new_model_is_served(
    client: openai.AsyncOpenAI, gateway: RunningGateway, model: str
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model=model, messages=HELLO, extra_body=SKIP
    )
    info = load_catalog().model(model)
    assert info is not None
    answer = raw.parse()
    assert answer.choices[0].message.content and answer.model == info.id
    assert raw.headers["x-service-model-used"] == f"{info.provider}/{info.id}"
    assert sent_model(gateway, info.provider) == info.upstream_id
    assert "deprecation" not in raw.headers
    extra = answer.model_extra or {}
    assert extra["service"]["cost"]["total"] > 0  # priced from the catalog


@pytest.mark.parametrize(
    ("snapshot", "model", "vendor", "upstream"),
    [
        # gpt-4o is the 2024-08-06 snapshot at OpenAI: a client pinning 2024-11-20 gets it
        ("gpt-4o-2024-11-20", "gpt-4o", "openai", "gpt-4o-2024-11-20"),
        ("gpt-4o-2024-08-06", "gpt-4o", "openai", "gpt-4o-2024-08-06"),
        (
            "anthropic/claude-opus-4-5-20251101",
            "claude-opus-4-5",
            "anthropic",
            "claude-opus-4-5-20251101",
        ),
    ],
)
async def test_a_dated_snapshot_is_served_as_its_model(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    snapshot: str,
    model: str,
    vendor: str,
    upstream: str,
) -> None:
    raw = await client.chat.completions.with_raw_response.create(
        model=snapshot, messages=HELLO, extra_body=SKIP
    )
    assert sent_model(gateway, vendor) == upstream  # the pinned snapshot, not the alias's
    assert raw.parse().model == model
    assert raw.headers["deprecation"] == "true"  # both have an announced shutdown
    detail = await client.models.retrieve(snapshot)
    assert detail.id == model


@pytest.mark.parametrize(
    ("model", "day", "replacement"),
    [
        ("gpt-3.5-turbo", "2026-10-23", "gpt-6-luna"),
        ("openai/gpt-4-32k", "2025-06-06", "gpt-6.1-sol"),
        ("claude-mythos-preview", "2026-06-30", "claude-fable-5-2"),
    ],
)
async def test_a_retired_model_is_a_404_naming_its_date(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, model: str, day: str, replacement: str
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model=model, messages=HELLO)
    body: Any = caught.value.body
    assert body["code"] == "model_not_found" and body["model"] == model
    assert f"retired by its provider on {day}" in body["message"]
    assert f"use '{replacement}'" in body["message"]
    listed = await http.get(f"/v1/models/{model}")
    assert listed.status_code == 404
    assert day in listed.json()["error"]["message"]


async def test_an_id_the_vendor_never_served_says_so(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="gpt-5.1-mini", messages=HELLO)
    message = caught.value.body["message"]  # type: ignore[index]
    assert "is not a model its provider serves" in message and "gpt-6-luna" in message


async def test_a_model_shutting_down_soon_warns_in_its_answer(client: openai.AsyncOpenAI) -> None:
    """Claude Sonnet 4.5 retires 2026-11-30 (Anthropic's SDK and model page)."""
    raw = await client.chat.completions.with_raw_response.create(
        model="claude-sonnet-4-5", messages=HELLO, extra_body=SKIP
    )
    assert raw.headers["deprecation"] == "true"
    assert raw.headers["sunset"] == "Mon, 30 Nov 2026 00:00:00 GMT"
    assert "claude-sonnet-5-5" in raw.headers["x-service-deprecation-warning"]


async def test_the_model_list_shows_the_new_models_not_the_retired(
    client: openai.AsyncOpenAI,
) -> None:
    ids = {m.id async for m in client.models.list()}
    assert {"gpt-6-astra", "gpt-6.2-sol", "claude-opus-5", "claude-mythos-5-2"} <= ids
    assert not ids & {"gpt-3.5-turbo", "o4-mini", "gpt-4.1-nano", "claude-mythos-preview"}
