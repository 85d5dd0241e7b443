"""Reading the catalog's JSON document into its value types, each entry checked.

Pure: `parse_parts` turns the decoded document into providers, models and retired ids, or
raises `CatalogError` naming the first bad entry; `providers.catalog` cross-checks them.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Any, cast

import attrs

from providers.catalog_model import (
    CAPABILITIES,
    ENDPOINTS,
    MODEL_STATUSES,
    MODEL_TYPES,
    PRICE_UNITS,
    REASONING_EFFORTS,
    SAMPLING,
    THINKING_STYLES,
    CatalogError,
    Deprecation,
    ModelInfo,
    ModelParameters,
    ModelStatus,
    ModelType,
    PriceUnit,
    Pricing,
    ProviderInfo,
)
from providers.catalog_retired import Retirement


def parse_parts(
    data: Mapping[str, Any],
) -> tuple[list[ProviderInfo], list[ModelInfo], list[Retirement]]:
    """The document's providers, models and retired ids; `CatalogError` on bad data."""
    try:
        providers = [_parse_provider(p) for p in data["providers"]]
        names = {p.id: p.name for p in providers}
        models = [_parse_model(m, names) for m in data["models"]]
        retired = [_parse_retirement(r) for r in data.get("retired", ())]
    except (KeyError, TypeError) as exc:
        raise CatalogError(f"malformed catalog entry: {exc!r}") from exc
    return providers, models, retired


def _parse_provider(raw: Mapping[str, Any]) -> ProviderInfo:
    capabilities = _known(raw["capabilities"], CAPABILITIES, f"provider {raw['id']!r}")
    pue = float(raw["pue"])
    if pue < 1.0:
        raise CatalogError(f"provider {raw['id']!r}: PUE below 1 is impossible")
    return ProviderInfo(
        id=str(raw["id"]),
        name=str(raw["name"]),
        base_url=str(raw["base_url"]),
        api_key_env=tuple(str(v) for v in raw["api_key_env"]),
        capabilities=capabilities,
        grid_region=str(raw["grid_region"]),
        pue=pue,
        status_url=str(raw["status_url"]),
    )


def _parse_model(raw: Mapping[str, Any], provider_names: Mapping[str, str]) -> ModelInfo:
    where = f"model {raw['id']!r}"
    model_type = _one_of(raw["type"], MODEL_TYPES, where)
    status = _one_of(raw["status"], MODEL_STATUSES, where)
    deprecation = _parse_deprecation(raw.get("deprecation"))
    if (status == "deprecated") != (deprecation is not None):
        raise CatalogError(f"{where}: a deprecation object goes with status 'deprecated' only")
    params = raw["params"]
    quality = int(raw["quality"])
    if not 0 <= quality <= 100:
        raise CatalogError(f"{where}: quality must be within 0-100")
    return ModelInfo(
        id=str(raw["id"]),
        provider=str(raw["provider"]),
        owned_by=provider_names.get(str(raw["provider"]), str(raw["provider"])),
        upstream_id=str(raw.get("upstream_id") or raw["id"]),
        type=cast(ModelType, model_type),
        name=str(raw["name"]),
        created=int(raw["created"]),
        status=cast(ModelStatus, status),
        capabilities=_known(raw["capabilities"], CAPABILITIES, where),
        context_window=int(raw["context_window"]),
        max_output_tokens=int(raw["max_output_tokens"]),
        pricing=_parse_pricing(raw["pricing"], where),
        quality=quality,
        active_params_b=float(params["active_params_b"]),
        total_params_b=float(params["total_params_b"]),
        params_estimated=bool(params["estimated"]),
        params_note=str(params.get("note", "")),
        aliases=tuple(str(a) for a in raw.get("aliases", ())),
        recommended_for=tuple(str(t) for t in raw.get("recommended_for", ())),
        fallback_chain=tuple(str(f) for f in raw.get("fallback_chain", ())),
        deprecation=deprecation,
        limits=types.MappingProxyType({str(k): int(v) for k, v in raw.get("limits", {}).items()}),
        parameters=_parse_parameters(raw.get("parameters") or {}, where),
        endpoints=_known(raw.get("endpoints", ()), ENDPOINTS, where),
    )


def _parse_parameters(raw: Mapping[str, Any], where: str) -> ModelParameters:
    unknown = set(raw) - {f.name for f in attrs.fields(ModelParameters)}
    if unknown:
        raise CatalogError(f"{where}: unknown parameters facts {sorted(unknown)}")
    efforts = tuple(str(e) for e in raw.get("reasoning_efforts", ()))
    if not set(efforts) <= set(REASONING_EFFORTS):
        raise CatalogError(f"{where}: reasoning_efforts must be among {REASONING_EFFORTS}")
    thinking = raw.get("thinking")
    if (thinking is None) != (not efforts) or (thinking and thinking not in THINKING_STYLES):
        raise CatalogError(f"{where}: 'thinking' ({sorted(THINKING_STYLES)}) goes with efforts")
    sampling = _one_of(raw.get("sampling", "always"), SAMPLING, where)
    return ModelParameters(
        sampling=sampling,
        reasoning_efforts=efforts,
        thinking=None if thinking is None else str(thinking),
        verbosities=tuple(str(v) for v in raw.get("verbosities", ())),
        prediction=bool(raw.get("prediction", False)),
    )


def _parse_pricing(raw: Mapping[str, Any], where: str) -> Pricing:
    unit = _one_of(raw.get("unit", "token"), PRICE_UNITS, where)
    unit_price = raw.get("unit_price")
    if (unit == "token") != (unit_price is None):
        raise CatalogError(f"{where}: unit_price goes with non-token units only")
    return Pricing(
        input_per_1m=float(raw["input_per_1m"]),
        output_per_1m=float(raw["output_per_1m"]),
        unit=cast(PriceUnit, unit),
        unit_price=None if unit_price is None else float(unit_price),
        audio_input_per_1m=_optional_price(raw, "audio_input_per_1m", where),
        audio_output_per_1m=_optional_price(raw, "audio_output_per_1m", where),
    )


def _optional_price(raw: Mapping[str, Any], name: str, where: str) -> float | None:
    value = raw.get(name)
    if value is None:
        return None
    if raw.get("unit", "token") != "token":
        raise CatalogError(f"{where}: {name} goes with token pricing only")
    return float(value)


def _parse_retirement(raw: Mapping[str, Any]) -> Retirement:
    retired_on = raw["retired_on"]
    return Retirement(
        id=str(raw["id"]),
        provider=str(raw["provider"]),
        retired_on=None if retired_on is None else str(retired_on),
        replacement=str(raw["replacement"]),
    )


def _parse_deprecation(raw: Mapping[str, Any] | None) -> Deprecation | None:
    if raw is None:
        return None
    return Deprecation(
        announced_date=str(raw["announced_date"]),
        sunset_date=str(raw["sunset_date"]),
        replacement=str(raw["replacement"]),
        migration_guide=str(raw["migration_guide"]),
    )


def _one_of(value: Any, allowed: frozenset[str], where: str) -> str:
    if value not in allowed:
        raise CatalogError(f"{where}: {value!r} is not one of {sorted(allowed)}")
    return str(value)


def _known(values: Iterable[Any], allowed: frozenset[str], where: str) -> tuple[str, ...]:
    return tuple(_one_of(v, allowed, where) for v in values)
