"""`auto` routing per mode, from the catalog and observed latency (pure)."""

from __future__ import annotations

import pytest

from gateway.upstream.resolve import (
    QUALITY_FLOOR,
    RoutingSignals,
    blended_price,
    carbon_g,
    expected_latency_ms,
    resolve_chat_target,
)
from providers.catalog import load_catalog

ALL = frozenset({"openai", "anthropic", "google", "mistral"})


def chat_models(active: frozenset[str]) -> list:  # type: ignore[type-arg]
    catalog = load_catalog()
    return [
        m
        for m in catalog.models(capability="chat")
        if m.provider in active and m.status == "available" and m.type == "chat"
    ]


def pick(mode: str, signals: RoutingSignals | None = None, active: frozenset[str] = ALL) -> str:
    resolution = resolve_chat_target(
        load_catalog(), active, model="auto", provider=None, mode=mode, signals=signals
    )
    assert resolution.mode == mode and mode in resolution.reasoning
    return resolution.target.model_id


def test_performance_takes_the_best_quality() -> None:
    best = max(chat_models(ALL), key=lambda m: m.quality)
    assert pick("performance") == best.id


def test_cost_optimized_takes_the_cheapest_above_the_quality_floor() -> None:
    eligible = [m for m in chat_models(ALL) if m.quality >= QUALITY_FLOOR]
    assert pick("cost_optimized") == min(eligible, key=blended_price).id


def test_sustain_optimized_takes_the_lowest_carbon_above_the_floor() -> None:
    catalog = load_catalog()
    eligible = [m for m in chat_models(ALL) if m.quality >= QUALITY_FLOOR]
    chosen = pick("sustain_optimized")
    assert chosen == min(eligible, key=lambda m: carbon_g(catalog, m)).id


def test_low_latency_follows_observed_latency_once_known() -> None:
    prior = pick("low_latency")
    prior_provider = load_catalog().model(prior).provider  # type: ignore[union-attr]
    slow = RoutingSignals(observed_latency_ms=lambda p: 5_000.0 if p == prior_provider else 50.0)
    assert load_catalog().model(pick("low_latency", slow)).provider != prior_provider  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["balanced", "low_latency", "sustain_optimized"])
def test_only_active_providers_are_chosen(mode: str) -> None:
    only = frozenset({"mistral"})
    assert load_catalog().model(pick(mode, active=only)).provider == "mistral"  # type: ignore[union-attr]


def test_expected_latency_prefers_observations() -> None:
    model = load_catalog().model("gpt-4o-mini")
    assert model is not None
    assert expected_latency_ms(model, RoutingSignals()) > 0
    assert expected_latency_ms(model, RoutingSignals(lambda p: 12.5)) == 12.5
