"""What a served request cost: tokens, dollars, energy, carbon, time.

Pure arithmetic over the catalog: the upstream's counts when it reported them, otherwise
an estimate (about four characters a token), so that a stream cut short or a vendor that
omits usage still gets a cost and a footprint. Every metered unit (tokens, audio seconds,
characters, pages, search units) is priced by the catalog in one rule,
`ModelInfo.metered_cost`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from gateway.upstream.rates import chat_rates
from providers.catalog import Catalog, CostBreakdown, ModelInfo
from providers.footprint import Footprint, cpu_estimate, estimate_usage
from providers.types import Usage

CHARS_PER_TOKEN = 4


@attrs.frozen
class Accounting:
    usage: Usage
    cost: CostBreakdown
    footprint: Footprint | None
    latency_ms: int


def billed_nothing(accounting: Accounting) -> Accounting:
    """`accounting` of an answer that cost nothing to give (a cache hit): its usage kept,
    no cost, no footprint."""
    return attrs.evolve(accounting, cost=CostBreakdown(0.0, 0.0, 0.0), footprint=None)


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN) if text else 0


def estimate_prompt_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
) -> int:
    """A rough prompt size: message text plus tool schemas, plus a few tokens per message."""
    total = 0
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content or "")
        total += estimate_tokens(text) + 4
    if tools:
        total += estimate_tokens(json.dumps(list(tools)))
    return total


def account(
    catalog: Catalog,
    info: ModelInfo | None,
    usage: Usage,
    *,
    latency_ms: int,
    task_type: str | None,
    provider_id: str | None = None,
) -> Accounting:
    """Cost and footprint of `usage` on `info` (zero cost when the model is not in the catalog).

    A model outside the catalog has no size to estimate from; when the caller names the
    provider that ran it (the local OCR engine), its energy is the CPU time it took.
    """
    if info is None:
        known = catalog.provider(provider_id) if provider_id is not None else None
        cpu = cpu_estimate(latency_ms / 1000, known) if known is not None else None
        return Accounting(usage, CostBreakdown(0.0, 0.0, 0.0), cpu, latency_ms)
    rates = chat_rates(catalog, info, usage, task_type)
    if rates is not None:  # a token-billed chat model: its constants, prepared once
        return Accounting(usage, rates.cost(usage), rates.footprint(usage), latency_ms)
    provider = catalog.provider(info.provider)
    footprint = estimate_usage(info, provider, usage, task_type) if provider is not None else None
    return Accounting(usage, info.metered_cost(usage), footprint, latency_ms)
