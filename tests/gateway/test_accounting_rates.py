"""A chat model's accounting from constants prepared once per catalog load (issue 37):
every figure bit-for-bit what the general rules give (`ModelInfo.metered_cost`,
`providers.footprint.estimate_usage`), for every chat model of the packaged catalog, and
a reloaded catalog's prices, not the old ones."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from gateway.upstream.accounting import Accounting, account
from gateway.upstream.rates import chat_rates
from providers.catalog import Catalog, ModelInfo, load_catalog, parse_catalog
from providers.footprint import estimate_usage, load_footprint_factors
from providers.types import Usage

USAGES = (Usage(), Usage(1, 1), Usage(8, 20), Usage(1234, 5678), Usage(1_000_000, 3), Usage(7, 0))
TASKS = (None, "no-such-task", *sorted(load_footprint_factors().task_multipliers))


def general(catalog: Catalog, info: ModelInfo, usage: Usage, task: str | None) -> Accounting:
    """The general rules, as `account` applied them before the constants."""
    provider = catalog.provider(info.provider)
    assert provider is not None
    footprint = estimate_usage(info, provider, usage, task)
    return Accounting(usage, info.metered_cost(usage), footprint, 5)


def chat_models(catalog: Catalog) -> list[ModelInfo]:
    return [m for m in catalog.models() if m.type == "chat" and m.pricing.unit == "token"]


def test_every_chat_model_is_accounted_exactly_as_the_general_rules() -> None:
    catalog = load_catalog()
    models = chat_models(catalog)
    assert len(models) > 10
    for info in models:
        for usage in USAGES:
            for task in TASKS:
                assert chat_rates(catalog, info, usage, task) is not None
                fast = account(catalog, info, usage, latency_ms=5, task_type=task)
                assert fast == general(catalog, info, usage, task), (info.id, usage, task)


@pytest.mark.parametrize(
    "usage", [Usage(10, 5, audio_prompt_tokens=4), Usage(10, 5, audio_completion_tokens=2)]
)
def test_audio_tokens_take_the_general_rules(usage: Usage) -> None:
    """Audio tokens have prices of their own: the general rule prices them."""
    catalog = load_catalog()
    info = chat_models(catalog)[0]
    assert chat_rates(catalog, info, usage, None) is None
    assert account(catalog, info, usage, latency_ms=5, task_type=None) == general(
        catalog, info, usage, None
    )


def test_a_negative_count_is_refused_as_before() -> None:
    catalog = load_catalog()
    info = chat_models(catalog)[0]
    with pytest.raises(ValueError):
        account(catalog, info, Usage(-1, 3), latency_ms=5, task_type=None)


def test_a_reloaded_catalog_prices_with_its_own_figures() -> None:
    """The constants belong to one catalog load: a catalog loaded again with other
    prices is priced with those."""
    text = resources.files("providers").joinpath("data", "catalog.json").read_text("utf-8")
    data = json.loads(text)
    first = parse_catalog(data)
    info = first.model("gpt-4o-mini")
    assert info is not None
    before = account(first, info, Usage(1000, 1000), latency_ms=5, task_type=None)
    for model in data["models"]:
        if model["id"] == "gpt-4o-mini":
            model["pricing"]["input_per_1m"] *= 2
            model["pricing"]["output_per_1m"] *= 2
    second = parse_catalog(data)
    again = second.model("gpt-4o-mini")
    assert again is not None
    after = account(second, again, Usage(1000, 1000), latency_ms=5, task_type=None)
    assert after.cost.total == pytest.approx(2 * before.cost.total)
    assert after == general(second, again, Usage(1000, 1000), None)
