"""The packaged catalog, its lookups, its cost arithmetic, its API shape and its validation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from providers.catalog import (
    Catalog,
    CatalogError,
    CostBreakdown,
    ModelInfo,
    load_catalog,
    model_to_api,
    parse_catalog,
)

PROVIDER_IDS = ["openai", "anthropic", "google", "mistral", "cohere", "elevenlabs", "local"]

REQUIRED_MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "text-embedding-3-small",
    "text-embedding-3-large",
    "text-embedding-ada-002",
    "whisper-1",
    "gpt-4o-mini-transcribe",
    "tts-1",
    "tts-1-hd",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-1",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5.5",
    "o3",
    "claude-fable-5-2",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "gemini-3.1-pro",
    "gemini-3.5-flash",
    "gemini-3.1-flash-lite",
    "magistral-medium-latest",
    "command-a-reasoning-08-2025",
    "embed-v4.0",
    "rerank-v4.0-pro",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-embedding-001",
    "mistral-large-latest",
    "mistral-small-latest",
    "mistral-embed",
    "mistral-ocr-latest",
    "voxtral-mini-latest",
    "codestral-latest",
    "rerank-v3.5",
    "embed-english-v3.0",
    "embed-multilingual-v3.0",
    "command-a-03-2025",
    "eleven_multilingual_v2",
    "eleven_flash_v2_5",
    "eleven_turbo_v2_5",
]


@pytest.fixture
def catalog() -> Catalog:
    return load_catalog()


def model(catalog: Catalog, model_id: str) -> ModelInfo:
    found = catalog.model(model_id)
    assert found is not None, model_id
    return found


# ------------------------------------------------------------------------------ contents


def test_providers_are_the_six_in_order(catalog: Catalog) -> None:
    assert [p.id for p in catalog.providers()] == PROVIDER_IDS


@pytest.mark.parametrize("model_id", REQUIRED_MODELS)
def test_required_model_is_present(catalog: Catalog, model_id: str) -> None:
    assert model(catalog, model_id).id == model_id


@pytest.mark.parametrize(
    ("provider_id", "base_url", "env"),
    [
        ("openai", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
        ("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
        (
            "google",
            "https://generativelanguage.googleapis.com",
            ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        ),
        ("mistral", "https://api.mistral.ai", ("MISTRAL_API_KEY",)),
        ("cohere", "https://api.cohere.com", ("COHERE_API_KEY", "CO_API_KEY")),
        ("elevenlabs", "https://api.elevenlabs.io", ("ELEVENLABS_API_KEY",)),
    ],
)
def test_provider_endpoints_and_keys(
    catalog: Catalog, provider_id: str, base_url: str, env: tuple[str, ...]
) -> None:
    provider = catalog.provider(provider_id)
    assert provider is not None
    assert provider.base_url == base_url
    assert provider.api_key_env == env
    assert provider.status_url.startswith("https://")
    assert provider.pue >= 1.0


def test_every_model_is_consistent(catalog: Catalog) -> None:
    for m in catalog.models():
        assert 0 <= m.quality <= 100
        assert 0 < m.active_params_b <= m.total_params_b
        assert m.created > 1_600_000_000
        provider = catalog.provider(m.provider)
        assert provider is not None and m.owned_by == provider.name
        for target in m.fallback_chain:
            assert model(catalog, target).type == m.type


def test_embedding_models_never_fall_back(catalog: Catalog) -> None:
    # Vectors of two models are not comparable: a fallback would corrupt an index silently.
    assert all(not m.fallback_chain for m in catalog.models(capability="embeddings"))


# --------------------------------------------------------------------------------- lookups


@pytest.mark.parametrize(
    ("name", "model_id", "upstream_id"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
        # a dated snapshot goes upstream as named (the undated id may be another snapshot)
        ("gpt-5.5-2026-04-23", "gpt-5.5", "gpt-5.5-2026-04-23"),
        ("gemini-3.1-pro-preview", "gemini-3.1-pro", "gemini-3.1-pro"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
        ("mistral-large", "mistral-large-latest", "mistral-large-latest"),
        ("whisper", "whisper-1", "whisper-1"),
    ],
)
def test_aliases_resolve(catalog: Catalog, name: str, model_id: str, upstream_id: str) -> None:
    found = model(catalog, name)
    assert (found.id, found.upstream_id) == (model_id, upstream_id)


def test_unknown_names_are_none(catalog: Catalog) -> None:
    assert catalog.model("gpt-9") is None
    assert catalog.provider("acme") is None


def test_filters(catalog: Catalog) -> None:
    deprecated = {m.id for m in catalog.models(status="deprecated")}
    assert {"gpt-4o", "gpt-4o-mini", "o3", "gpt-5", "claude-sonnet-4-5"} <= deprecated
    assert all(m.deprecation is not None for m in catalog.models(status="deprecated"))
    assert [m.id for m in catalog.models(provider="cohere", capability="rerank")] == [
        "rerank-v3.5",
        "rerank-v4.0-pro",
        "rerank-v4.0-fast",
    ]
    reasoning = {m.id for m in catalog.models(capability="reasoning")}
    assert {"gpt-5.5", "o3", "claude-sonnet-5-5", "gemini-3.1-pro"} <= reasoning
    assert all(m.parameters.reasoning_efforts for m in catalog.models(capability="reasoning"))
    assert {m.provider for m in catalog.models(capability="speech")} == {
        "openai",
        "elevenlabs",
        "google",
        "local",
    }
    assert catalog.models_of("elevenlabs") == catalog.models(provider="elevenlabs")
    assert catalog.models(provider="acme") == []
    assert len(catalog.models()) == len({m.id for m in catalog.models()})


# ------------------------------------------------------------------------------------ cost


@pytest.mark.parametrize(
    ("model_id", "prompt", "completion", "expected"),
    [
        ("gpt-4o", 1000, 500, CostBreakdown(0.0025, 0.005, 0.0075)),
        ("gpt-4o-mini", 1_000_000, 1_000_000, CostBreakdown(0.15, 0.6, 0.75)),
        ("claude-opus-4-1", 1, 1, CostBreakdown(1.5e-05, 7.5e-05, 9e-05)),
        ("text-embedding-3-small", 1, 0, CostBreakdown(2e-08, 0.0, 2e-08)),
        ("text-embedding-3-small", 0, 0, CostBreakdown(0.0, 0.0, 0.0)),
        # 3 * 0.10 / 1e6 = 3e-7 exactly after rounding, not 2.9999999999999997e-07.
        ("gemini-2.5-flash-lite", 3, 0, CostBreakdown(3e-07, 0.0, 3e-07)),
        # Below 1e-8 USD rounds away: 0.2 of a hundred-millionth of a dollar.
        ("text-embedding-3-small", 0, 7, CostBreakdown(0.0, 0.0, 0.0)),
    ],
)
def test_cost(
    catalog: Catalog, model_id: str, prompt: int, completion: int, expected: CostBreakdown
) -> None:
    assert model(catalog, model_id).cost(prompt, completion) == expected


@pytest.mark.parametrize(
    ("model_id", "quantity", "expected"),
    [
        ("whisper-1", 10, 0.06),
        ("tts-1", 1000, 0.015),
        ("eleven_flash_v2_5", 1000, 0.05),
        ("mistral-ocr-latest", 3, 0.006),
        ("rerank-v3.5", 1, 0.002),
    ],
)
def test_unit_cost(catalog: Catalog, model_id: str, quantity: float, expected: float) -> None:
    assert model(catalog, model_id).unit_cost(quantity) == expected


def test_cost_rejects_bad_input(catalog: Catalog) -> None:
    with pytest.raises(ValueError):
        model(catalog, "gpt-4o").cost(-1, 0)
    with pytest.raises(ValueError):
        model(catalog, "gpt-4o").unit_cost(1)


# ------------------------------------------------------------------------------- API shape


def test_model_to_api_list_item(catalog: Catalog) -> None:
    assert model_to_api(model(catalog, "gpt-5.4-mini"), detail=False) == {
        "id": "gpt-5.4-mini",
        "object": "model",
        "created": 1773705600,
        "owned_by": "OpenAI",
        "service": {
            "provider": "openai",
            "capabilities": [
                "chat", "vision", "file_input", "function_calling", "json_mode", "streaming",
                "reasoning",
            ],
            "context_window": 400000,
            "max_output_tokens": 128000,
            "pricing": {"input_per_1m": 0.75, "output_per_1m": 4.5},
            "status": "available",
        },
    }  # fmt: skip


def test_model_to_api_detail_of_deprecated_model(catalog: Catalog) -> None:
    service = model_to_api(model(catalog, "gpt-5.1"), detail=True)["service"]
    assert service["status"] == "deprecated"
    assert service["deprecation"] == {
        "announced_date": "2026-10-01",
        "sunset_date": "2027-04-01",
        "replacement": "gpt-6.1-sol",
        "migration_guide": "https://developers.openai.com/api/docs/deprecations",
    }
    assert service["aliases"] == ["gpt-5.1-2025-11-13"]
    assert service["recommended_for"] == ["reasoning", "code", "agents"]
    assert service["fallback_chain"] == ["claude-sonnet-5-5", "gemini-3.1-pro"]
    # A deprecated model still falls back where it did: its clients keep working.


def test_model_to_api_unit_pricing(catalog: Catalog) -> None:
    service = model_to_api(model(catalog, "whisper-1"), detail=False)["service"]
    assert service["pricing"] == {
        "input_per_1m": 0.0,
        "output_per_1m": 0.0,
        "unit": "minute",
        "unit_price": 0.006,
    }
    assert "aliases" not in service
    # OpenAI shuts whisper-1 down on 2027-02-26 (the `openai` package's model docstrings).
    assert service["deprecation"]["sunset_date"] == "2027-02-26"
    assert service["deprecation"]["replacement"] == "gpt-transcribe"


# ------------------------------------------------------------------------------ validation


def minimal_doc() -> dict[str, Any]:
    def provider(pid: str) -> dict[str, Any]:
        return {
            "id": pid,
            "name": pid.title(),
            "base_url": f"https://{pid}.example",
            "api_key_env": [f"{pid.upper()}_API_KEY"],
            "capabilities": ["chat"],
            "grid_region": "us",
            "pue": 1.1,
            "status_url": f"https://status.{pid}.example",
        }

    def chat(mid: str, pid: str, fallback: list[str]) -> dict[str, Any]:
        return {
            "id": mid,
            "provider": pid,
            "type": "chat",
            "name": mid,
            "created": 1_700_000_000,
            "status": "available",
            "capabilities": ["chat"],
            "context_window": 1000,
            "max_output_tokens": 100,
            "pricing": {"input_per_1m": 1.0, "output_per_1m": 2.0},
            "quality": 50,
            "params": {"active_params_b": 1, "total_params_b": 1, "estimated": False},
            "aliases": [f"{mid}-alias"],
            "fallback_chain": fallback,
        }

    return {
        "providers": [provider("a"), provider("b")],
        "models": [chat("m1", "a", ["m2"]), chat("m2", "b", ["m1"])],
    }


def test_minimal_doc_is_valid() -> None:
    built = parse_catalog(minimal_doc())
    assert [m.id for m in built.models()] == ["m1", "m2"]
    assert model(built, "m2-alias").owned_by == "B"


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("models", 0, "fallback_chain"), ["nope"], "unknown model"),
        (("models", 0, "fallback_chain"), ["m1"], "itself"),
        (("models", 0, "provider"), "zzz", "unknown provider"),
        (("models", 1, "id"), "m1", "used by"),
        (("models", 1, "aliases"), ["m1"], "used by"),
        (("models", 1, "aliases"), ["m1-alias"], "used by"),
        (("providers", 1, "id"), "a", "duplicate provider"),
        (("models", 0, "capabilities"), ["telepathy"], "not one of"),
        (("models", 0, "type"), "video", "not one of"),
        (("models", 0, "status"), "deprecated", "deprecation"),
        (("models", 0, "quality"), 101, "quality"),
        (("models", 0, "pricing", "unit"), "minute", "unit_price"),
        (("models", 0, "params"), {}, "malformed"),
        (("providers", 0, "pue"), 0.9, "PUE"),
    ],
)
def test_inconsistent_catalog_is_refused(path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        parse_catalog(_set(minimal_doc(), path, value))


def test_fallback_to_another_type_is_refused() -> None:
    doc = _set(minimal_doc(), ("models", 1, "type"), "embedding")
    with pytest.raises(CatalogError, match="another type"):
        parse_catalog(doc)


def test_deprecation_needs_a_known_replacement() -> None:
    doc = _set(minimal_doc(), ("models", 0, "status"), "deprecated")
    deprecation = {
        "announced_date": "2025-01-01",
        "sunset_date": "2025-06-01",
        "replacement": "ghost",
        "migration_guide": "https://example.com",
    }
    with pytest.raises(CatalogError, match="replacement"):
        parse_catalog(_set(doc, ("models", 0, "deprecation"), deprecation))
    deprecation["replacement"] = "m2"
    built = parse_catalog(_set(doc, ("models", 0, "deprecation"), deprecation))
    assert model(built, "m1").deprecation is not None


# -------------------------------------------------------------- provider ids, pass-through


def test_a_model_is_found_by_its_provider_id(catalog: Catalog) -> None:
    assert model(catalog, "openai/gpt-5.4-mini").id == "gpt-5.4-mini"
    assert model(catalog, "anthropic/claude-sonnet-4-5-20250929").id == "claude-sonnet-4-5"
    assert catalog.model("google/gpt-5.4-mini") is None  # not that provider's model
    assert catalog.model("acme/gpt-5.4-mini") is None


@pytest.mark.parametrize("spec", ["gpt-9*", "acme/x", "openai/", "/x", "openai/x, nope"])
def test_a_bad_pass_through_entry_is_refused(catalog: Catalog, spec: str) -> None:
    with pytest.raises(CatalogError):
        catalog.with_passthrough(spec)


def test_pass_through_models_are_described_by_their_providers_ceiling(catalog: Catalog) -> None:
    allowing = catalog.with_passthrough("openai/gpt-9*, mistral/*")
    assert catalog.passthrough("gpt-9", "chat") is None  # nothing allowed by default
    chat = allowing.passthrough("gpt-9-mini", "chat")
    assert chat is not None and chat.passthrough and chat.provider == "openai"
    assert (chat.id, chat.upstream_id, chat.status, chat.context_window) == (
        "gpt-9-mini", "gpt-9-mini", "beta", 0,
    )  # fmt: skip
    dearest = max(
        catalog.models(provider="openai", capability="chat"),
        key=lambda m: 3 * m.pricing.input_per_1m + m.pricing.output_per_1m,
    )
    assert chat.pricing == dearest.pricing
    embed = allowing.passthrough("openai/gpt-9-embed", "embeddings")
    assert embed is not None and embed.type == "embedding"
    assert embed.pricing == model(catalog, "text-embedding-3-large").pricing
    assert allowing.passthrough("anything", "chat") is not None  # mistral/*, in order
    assert allowing.passthrough("anthropic/gpt-9", "chat") is None
    assert allowing.passthrough("gpt-5.4-mini", "chat") is None  # a catalog model
