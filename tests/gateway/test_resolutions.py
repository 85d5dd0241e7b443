"""The routing of a named model is made once per set of providers
(`gateway.chat.resolutions`): a change of the providers must change the routing at the
next request, and a refusal is never kept."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from gateway.chat.resolutions import Resolutions
from gateway.platform.errors import ApiError
from gateway.upstream.resolve import Resolution, resolve_chat_target
from providers.catalog import load_catalog

PROVIDERS = "/v1/management/providers"


async def _served_by(client: openai.AsyncOpenAI, prompt: str) -> str:
    """The provider that answered (each prompt new: the response cache must not answer)."""
    messages: Any = [{"role": "user", "content": prompt}]
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=messages
    )
    return str(raw.http_response.json()["service"]["provider"])


async def test_disabling_and_enabling_a_provider_changes_the_next_requests_route(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    assert await _served_by(client, "one") == "openai"  # the routing is made and kept
    assert (await http.post(f"{PROVIDERS}/openai/disable")).status_code == 200
    assert await _served_by(client, "two") != "openai"  # its fallback, at once
    assert (await http.post(f"{PROVIDERS}/openai/enable")).status_code == 200
    assert await _served_by(client, "three") == "openai"


def test_the_same_sets_give_the_same_resolution_and_refusals_are_not_kept() -> None:
    catalog = load_catalog()
    memo = Resolutions(max_entries=2)
    calls: list[str] = []

    def resolving(model: str, active: frozenset[str]) -> Resolution:
        def resolve() -> Resolution:
            calls.append(model)
            return resolve_chat_target(catalog, active, model=model, provider=None, mode="balanced")

        return memo.resolved(active, frozenset(), model, "balanced", resolve)

    openai_only, both = frozenset({"openai"}), frozenset({"openai", "google"})
    first = resolving("gpt-4o-mini", openai_only)
    assert resolving("gpt-4o-mini", openai_only) is first
    assert resolving("gpt-4o-mini", both) is not first  # another provider set
    assert calls == ["gpt-4o-mini", "gpt-4o-mini"]
    for _ in range(2):
        with pytest.raises(ApiError):
            resolving("no-such-model", openai_only)
    assert calls.count("no-such-model") == 2
    resolving("gemini-2.5-flash", both)  # a third entry: the memo starts over (bounded)
    resolving("gpt-4o-mini", openai_only)
    assert calls[-1] == "gpt-4o-mini"
