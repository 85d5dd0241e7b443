"""Energy and carbon estimates: hand-computed tables, monotonicity, and the data's sources."""

from __future__ import annotations

import copy
import itertools
import json
from importlib import resources
from typing import Any

import attrs
import pytest

from providers.catalog import ModelInfo, Pricing, ProviderInfo, load_catalog
from providers.footprint import (
    FootprintDataError,
    FootprintFactors,
    LlmFactors,
    audio_seconds_to_tokens,
    decode_energy_kwh,
    estimate,
    gpu_count,
    load_footprint_factors,
    parse_footprint_factors,
    prefill_energy_kwh,
)

REAL = load_footprint_factors()


def raw_table() -> dict[str, Any]:
    text = resources.files("providers").joinpath("data", "footprint.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def make_model(
    active: float, total: float, model_type: str = "chat", estimated: bool = False
) -> ModelInfo:
    return ModelInfo(
        id="m",
        provider="p",
        owned_by="P",
        upstream_id="m",
        type=model_type,  # type: ignore[arg-type]
        name="m",
        created=0,
        status="available",
        capabilities=("chat",),
        context_window=1000,
        max_output_tokens=1000,
        pricing=Pricing(1.0, 1.0),
        quality=50,
        active_params_b=active,
        total_params_b=total,
        params_estimated=estimated,
        params_note="",
    )


def make_provider(pue: float = 1.2, region: str = "us") -> ProviderInfo:
    return ProviderInfo(
        id="p",
        name="P",
        base_url="https://p.example",
        api_key_env=("P_KEY",),
        capabilities=("chat",),
        grid_region=region,
        pue=pue,
        status_url="https://status.p.example",
    )


# -------------------------------------------------------------------------- GPU count


@pytest.mark.parametrize(
    ("total_params_b", "gpus"),
    [
        (0, 1),  # nothing to hold still takes one GPU
        (18, 1),  # 1.2 * 18 * 2 B = 43.2 GB
        (33.3, 1),  # 79.92 GB
        (34, 2),  # 81.6 GB
        (100, 4),  # 240 GB -> 3 -> rounded up to a power of two
        (440, 16),  # 1056 GB -> 14 -> 16
        (675, 32),  # 1620 GB -> 21 -> 32
        (2000, 64),  # 4800 GB -> 60 -> 64
    ],
)
def test_gpu_count(total_params_b: float, gpus: int) -> None:
    assert gpu_count(total_params_b, REAL.llm) == gpus


# --------------------------------------------------------- hand-computable synthetic factors

# With beta = 0 the exponential is 1: GPU energy per token is alpha * P + gamma Wh, latency per
# token is latency_gamma seconds, 16-bit weights with no overhead need 2 GB per billion.
SIMPLE_LLM = LlmFactors(
    gpu_energy_alpha=1e-6,
    gpu_energy_beta=0.0,
    gpu_energy_gamma=1e-5,
    latency_alpha=0.0,
    latency_beta=0.0,
    latency_gamma=0.036,
    batch_size=10,
    quantization_bits=16,
    memory_overhead=1.0,
    gpu_memory_gb=80,
    server_gpu_count=8,
    server_power_kw=1.0,
)


@pytest.mark.parametrize(
    ("active", "total", "tokens", "expected_kwh"),
    [
        # 1 GPU: gpu = 1000 * (1e-6*10 + 1e-5) / 1000 = 2e-5 kWh;
        # latency 36 s -> server = 36/3600 * 1 kW * 1/8 / 10 = 1.25e-4 kWh.
        (10, 10, 1000, 1.45e-4),
        # 80B needs 160 GB = 2 GPUs: gpu = 2 * 1000 * (8e-5 + 1e-5)/1000 = 1.8e-4;
        # server = 0.01 * 2/8 / 10 = 2.5e-4.
        (80, 80, 1000, 4.3e-4),
        # MoE: 10B active of 80B total: gpu = 2 * 2e-5 = 4e-5; server 2.5e-4.
        (10, 80, 1000, 2.9e-4),
        (10, 10, 0, 0.0),
    ],
)
def test_decode_energy_by_hand(
    active: float, total: float, tokens: int, expected_kwh: float
) -> None:
    assert decode_energy_kwh(active, total, tokens, SIMPLE_LLM) == pytest.approx(expected_kwh)


def test_measured_latency_caps_the_server_term() -> None:
    # 1000 tokens would take 36 s; measured 3.6 s -> server = 0.001 * 1/8 / 10 = 1.25e-5.
    capped = decode_energy_kwh(10, 10, 1000, SIMPLE_LLM, measured_latency_s=3.6)
    assert capped == pytest.approx(2e-5 + 1.25e-5)
    assert decode_energy_kwh(10, 10, 1000, SIMPLE_LLM, measured_latency_s=1e9) == pytest.approx(
        1.45e-4
    )


def test_prefill_energy_by_hand() -> None:
    # 2 * 1e9 FLOPs per token * 1000 tokens = 2e12 FLOPs;
    # 700 W / (9.89e14 FLOP/s * 0.3) = 2.359286e-12 J/FLOP -> 4.718571 J = 1.3107143e-6 kWh.
    assert prefill_energy_kwh(1.0, 1000, REAL.prefill) == pytest.approx(1.3107143e-6, rel=1e-5)
    assert prefill_energy_kwh(1.0, 0, REAL.prefill) == 0.0


# ------------------------------------------------------------ the published constants


# Hand derivation for the first row (18B dense, 1000 tokens, PUE 1.2):
#   alpha * exp(beta * 64) = 1.1665273e-6 * 0.48812735 = 5.6941389e-7 Wh per billion
#   GPU: 1 GPU * 1000 * (5.6941389e-7 * 18 + 4.0529281e-5) Wh = 5.0778731e-5 kWh
#   latency: 1000 * (6.785088e-4 * 18 + 3.119310e-4 * 64 + 1.9473718e-2) = 51.65047 s
#   server: 51.65047 / 3600 * 1.2 kW * 1/8 / 64 = 3.3626608e-5 kWh
#   request: 1.2 * (5.0778731e-5 + 3.3626608e-5) = 1.0128640e-4 kWh
@pytest.mark.parametrize(
    ("active", "total", "tokens", "pue", "expected_kwh"),
    [
        (18, 18, 1000, 1.2, 1.0128640e-4),
        (88, 440, 1000, 1.2, 2.9795699e-3),
        (41, 675, 500, 1.16, 1.9982033e-3),
        (22.5, 22.5, 1, 1.14, 1.0140929e-7),
        (18, 18, 0, 1.2, 0.0),
    ],
)
def test_estimate_with_published_constants(
    active: float, total: float, tokens: int, pue: float, expected_kwh: float
) -> None:
    result = estimate(make_model(active, total), make_provider(pue=pue), tokens)
    assert result.energy_kwh == pytest.approx(expected_kwh, rel=1e-6)
    assert result.carbon_gco2e == pytest.approx(expected_kwh * 384.4, rel=1e-6)
    assert result.provider_pue == pue
    assert (result.grid_region, result.grid_intensity_gco2_per_kwh) == ("us", 384.4)
    assert result.task_multiplier == 1.0


def test_catalog_model_estimate() -> None:
    catalog = load_catalog()
    mini = catalog.model("gpt-4o-mini")
    openai = catalog.provider("openai")
    assert mini is not None and openai is not None
    result = estimate(mini, openai, output_tokens=1000, prompt_tokens=5000, task_type="chat")
    assert result.energy_kwh == pytest.approx(1.0128640e-4, rel=1e-6)
    assert result.carbon_gco2e == pytest.approx(1.0128640e-4 * 384.4, rel=1e-6)
    assert result.confidence_level == "low"


@pytest.mark.parametrize(
    ("model_id", "confidence"),
    [
        ("gpt-4o", "low"),
        ("claude-opus-4-1", "low"),
        ("mistral-large-latest", "high"),
        ("command-a-03-2025", "high"),
        ("whisper-1", "medium"),
        ("voxtral-mini-latest", "medium"),
        ("text-embedding-3-small", "low"),
    ],
)
def test_confidence(model_id: str, confidence: str) -> None:
    catalog = load_catalog()
    m = catalog.model(model_id)
    assert m is not None
    provider = catalog.provider(m.provider)
    assert provider is not None
    assert estimate(m, provider, 10, 10).confidence_level == confidence


# -------------------------------------------------------------------------- by model type


def test_chat_ignores_prompt_tokens_like_ecologits() -> None:
    m, p = make_model(18, 18), make_provider()
    assert estimate(m, p, 100, 0).energy_kwh == estimate(m, p, 100, 100_000).energy_kwh


def test_embedding_counts_prompt_tokens_only() -> None:
    m, p = make_model(1.0, 1.0, "embedding"), make_provider(pue=1.5)
    result = estimate(m, p, output_tokens=0, prompt_tokens=1000)
    assert result.energy_kwh == pytest.approx(1.5 * 1.3107143e-6, rel=1e-5)
    assert estimate(m, p, 0, 0).energy_kwh == 0.0


def test_transcription_adds_reading_and_writing() -> None:
    m, p = make_model(1.55, 1.55, "transcription"), make_provider()
    audio = audio_seconds_to_tokens(30, REAL)
    assert audio == 1500
    read = prefill_energy_kwh(1.55, audio, REAL.prefill)
    write = decode_energy_kwh(1.55, 1.55, 100, REAL.llm)
    assert estimate(m, p, 100, audio).energy_kwh == pytest.approx(1.2 * (read + write))


def test_speech_reads_prompt_tokens_as_characters() -> None:
    m, p = make_model(1.0, 1.0, "speech"), make_provider()
    # 150 characters at 15 per second = 10 s of audio = 500 audio tokens generated.
    expected = 1.2 * decode_energy_kwh(1.0, 1.0, 500, REAL.llm)
    assert estimate(m, p, output_tokens=0, prompt_tokens=150).energy_kwh == pytest.approx(expected)


# ----------------------------------------------------------------------------- monotonicity


@pytest.mark.parametrize("model_type", ["chat", "embedding", "speech", "transcription", "ocr"])
def test_energy_grows_with_tokens(model_type: str) -> None:
    m, p = make_model(8, 8, model_type), make_provider()
    energies = [estimate(m, p, n, n).energy_kwh for n in (0, 1, 10, 100, 1000, 10_000)]
    assert energies[0] == 0.0
    assert all(a < b for a, b in itertools.pairwise(energies))


def test_energy_grows_with_active_params() -> None:
    p = make_provider()
    energies = [estimate(make_model(a, 100), p, 500).energy_kwh for a in (1, 5, 10, 50, 100)]
    assert all(a < b for a, b in itertools.pairwise(energies))


def test_energy_never_falls_with_total_params() -> None:
    p = make_provider()
    totals = (10, 33, 34, 100, 440, 2000)
    energies = [estimate(make_model(10, t), p, 500).energy_kwh for t in totals]
    assert all(a <= b for a, b in itertools.pairwise(energies))
    assert energies[0] < energies[-1]


def test_carbon_follows_the_grid() -> None:
    m = make_model(18, 18)
    by_region = {r: estimate(m, make_provider(region=r), 100) for r in ("eu-se", "eu-fr", "us")}
    assert by_region["eu-se"].carbon_gco2e < by_region["eu-fr"].carbon_gco2e
    assert by_region["eu-fr"].carbon_gco2e < by_region["us"].carbon_gco2e
    assert len({f.energy_kwh for f in by_region.values()}) == 1


# ---------------------------------------------------------------- overrides and bad input


def test_region_override_and_unknown_region() -> None:
    m, p = make_model(18, 18), make_provider()
    result = estimate(m, p, 100, grid_region="eu-fr")
    assert (result.grid_region, result.grid_intensity_gco2_per_kwh) == ("eu-fr", 41.44)
    with pytest.raises(ValueError, match="grid region"):
        estimate(m, p, 100, grid_region="mars")


def test_negative_tokens_are_refused() -> None:
    with pytest.raises(ValueError):
        estimate(make_model(1, 1), make_provider(), -1)


def test_task_multiplier() -> None:
    m, p = make_model(18, 18), make_provider()
    assert estimate(m, p, 100, task_type="summarization").task_multiplier == 1.0
    tuned: FootprintFactors = attrs.evolve(REAL, task_multipliers={"summarization": 1.5})
    plain = estimate(m, p, 100, factors=tuned)
    boosted = estimate(m, p, 100, task_type="summarization", factors=tuned)
    assert boosted.task_multiplier == 1.5
    assert boosted.energy_kwh == pytest.approx(1.5 * plain.energy_kwh)


# ------------------------------------------------------------------------- the data itself


def test_every_provider_region_and_pue_is_in_the_table() -> None:
    for provider in load_catalog().providers():
        assert provider.grid_region in REAL.grid_intensity
        assert REAL.provider_pue[provider.id] == provider.pue


def test_required_grid_regions() -> None:
    for region in ("world", "us", "eu-fr", "eu-se", "eu-ie", "eu-de"):
        assert REAL.grid_intensity[region] > 0


def test_every_constant_group_cites_a_source() -> None:
    data = raw_table()
    for group in ("llm", "prefill", "audio", "datacenter", "grid", "task_multipliers"):
        sources = data[group]["sources"]
        assert sources and all(s["title"] and s["url"].startswith("https://") for s in sources)


@pytest.mark.parametrize("group", ["llm", "grid", "task_multipliers"])
def test_a_group_without_sources_is_refused(group: str) -> None:
    data = copy.deepcopy(raw_table())
    data[group]["sources"] = []
    with pytest.raises(FootprintDataError, match=group):
        parse_footprint_factors(data)


def test_a_missing_constant_is_refused() -> None:
    data = copy.deepcopy(raw_table())
    del data["llm"]["batch_size"]
    with pytest.raises(FootprintDataError, match="malformed"):
        parse_footprint_factors(data)
