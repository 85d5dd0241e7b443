"""Building the matcher's view of a chat request (pure).

The chat path and the rule-test endpoint both describe a request the same way, so a
dry run answers exactly what a real request would get.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gateway.upstream.accounting import estimate_prompt_tokens
from gateway.upstream.routing.rules import RequestContext
from providers.catalog import Catalog
from store.keys import ApiKeyRecord


def model_names(catalog: Catalog, model: str) -> frozenset[str]:
    """Every name the requested model goes by: as sent, its catalog id and aliases, and
    `provider/id` (a rule may name it either way)."""
    info = catalog.model(model)
    if info is None:
        return frozenset({model})
    return frozenset({model, info.id, f"{info.provider}/{info.id}", *info.aliases})


def request_metadata(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body's `service.tags` with its `metadata` object laid over them."""
    merged: dict[str, Any] = {}
    service = body.get("service")
    if isinstance(service, dict) and isinstance(service.get("tags"), dict):
        merged.update(service["tags"])
    if isinstance(body.get("metadata"), dict):
        merged.update(body["metadata"])
    return merged


def prompt_estimate(body: Mapping[str, Any]) -> int:
    messages = body.get("messages")
    tools = body.get("tools")
    if not isinstance(messages, list):
        return 0
    valid = [m for m in messages if isinstance(m, dict)]
    return estimate_prompt_tokens(valid, tools if isinstance(tools, list) else None)


def chat_context(
    catalog: Catalog,
    key: ApiKeyRecord,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    now: datetime,
) -> RequestContext:
    """The context of a chat-completions body (already validated by `parse_chat_body`)."""
    model = body.get("model")
    return RequestContext(
        model_names=model_names(catalog, model) if isinstance(model, str) else frozenset(),
        key_id=key.id,
        key_prefix=key.prefix,
        key_name=key.name,
        headers=dict(headers.items()),
        metadata=request_metadata(body),
        now=now,
        prompt_tokens=prompt_estimate(body),
    )
