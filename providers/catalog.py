"""The model and provider catalog: what each upstream offers, what it costs, how it falls back.

The catalog is data (`providers/data/catalog.json`, sources in `SOURCES.md`) read once and
checked on load: a catalog whose fallback chains name unknown models, whose models name unknown
providers, or whose ids and aliases collide is refused with `CatalogError`. Everything here is
pure; `load_catalog()` is the only function that touches the package data, and it caches its
frozen result.

The value types are `providers.catalog_model`, the reading of the document
`providers.catalog_parse`, the retired ids `providers.catalog_retired` and the API view
`providers.catalog_api`; the names most callers use are re-exported here.
"""

from __future__ import annotations

import functools
import json
import re
import types
from collections.abc import Collection, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, cast

import attrs

from providers.catalog_api import ModelObject, model_to_api
from providers.catalog_model import (
    CAPABILITIES,
    MODEL_STATUSES,
    MODEL_TYPES,
    REASONING_EFFORTS,
    CatalogError,
    CostBreakdown,
    Deprecation,
    ModelInfo,
    ModelParameters,
    ModelType,
    Pricing,
    ProviderInfo,
    round_cost,
)
from providers.catalog_parse import parse_parts
from providers.catalog_retired import Retirement, prefixed, retired_table
from providers.passthrough import (
    CAPABILITY_TYPES,
    PassthroughRule,
    allowed,
    parse_passthrough,
    price_rank,
)

__all__ = [
    "CAPABILITIES",
    "MODEL_STATUSES",
    "MODEL_TYPES",
    "REASONING_EFFORTS",
    "Catalog",
    "CatalogError",
    "CostBreakdown",
    "Deprecation",
    "ModelInfo",
    "ModelObject",
    "Pricing",
    "ProviderInfo",
    "Retirement",
    "build_catalog",
    "load_catalog",
    "model_to_api",
    "parse_catalog",
    "round_cost",
]


@attrs.frozen(slots=True)
class Catalog:
    """Every known provider and model, with aliases resolved. Build with `build_catalog`."""

    _providers: tuple[ProviderInfo, ...]
    _models: tuple[ModelInfo, ...]
    _by_name: Mapping[str, ModelInfo]
    _providers_by_id: Mapping[str, ProviderInfo]
    _passthrough: tuple[PassthroughRule, ...] = ()
    _retired: Mapping[str, Retirement] = attrs.field(factory=dict)

    def model(self, id_or_alias: str) -> ModelInfo | None:
        """A model by id or alias, or `provider/id` (the provider must be the model's)."""
        found = self._by_name.get(id_or_alias)
        if found is not None or "/" not in id_or_alias:
            return found
        return prefixed(self._by_name, id_or_alias)

    def retired(self, name: str) -> Retirement | None:
        """The retirement of `name` (an id, or `provider/id` of its provider), if its vendor
        shut it down: a 404 that says when and names the replacement, not a bare one."""
        found = self._retired.get(name)
        if found is not None or "/" not in name:
            return found
        return prefixed(self._retired, name)

    def with_retired(self, retired: Iterable[Retirement]) -> Catalog:
        """This catalog knowing the `retired` ids; `CatalogError` if one is still served,
        names another provider's model as replacement, or is listed twice."""
        table = retired_table(retired, self._by_name, self._providers_by_id)
        return attrs.evolve(self, retired=types.MappingProxyType(table))

    def with_passthrough(self, spec: str) -> Catalog:
        """This catalog allowing the pass-through models of `spec` (comma-separated
        `provider/pattern` entries); `CatalogError` names a bad entry."""
        try:
            rules = parse_passthrough(spec, self._providers_by_id)
        except ValueError as exc:
            raise CatalogError(str(exc)) from None
        return attrs.evolve(self, passthrough=rules)

    def without_types(self, types: Collection[str]) -> Catalog:
        """This catalog without the models of `types` (and fallbacks to them): what a
        gateway offers when the families serving those types are not installed."""
        if not types:
            return self
        kept = [m for m in self._models if m.type not in types]
        ids = {m.id for m in kept}
        kept = [
            attrs.evolve(m, fallback_chain=tuple(f for f in m.fallback_chain if f in ids))
            for m in kept
        ]
        elsewhere = {m.id for m in self._models} - ids
        rebuilt = build_catalog(self._providers, kept, elsewhere=elsewhere)
        return attrs.evolve(rebuilt, passthrough=self._passthrough, retired=self._retired)

    def passthrough(self, name: str, capability: str) -> ModelInfo | None:
        """The description of `name` when the catalog does not list it but the operator
        allows it for `capability` (see `providers.passthrough`); None otherwise."""
        if self.model(name) is not None or self.retired(name) is not None:
            return None
        found = allowed(self._passthrough, name, self._providers_by_id)
        return None if found is None else self.passthrough_for(*found, capability)

    def passthrough_for(self, provider: str, model_id: str, capability: str) -> ModelInfo | None:
        """`model_id` of `provider` described by the provider's dearest catalog model with
        `capability`; None when the provider's catalog models offer none."""
        peers = [m for m in self.models(provider=provider, capability=capability)]
        if not peers:
            return None
        ceiling = max(
            peers,
            key=lambda m: price_rank(
                m.pricing.input_per_1m, m.pricing.output_per_1m, m.pricing.unit_price
            ),
        )
        # What it may be asked is what any of its provider's models of the kind takes (the
        # vendor decides, as for every parameter), not only what the dearest one takes.
        offered = tuple(c for peer in peers for c in peer.capabilities)
        return _described_by(
            ceiling, model_id, capability, self._providers_by_id[provider], offered
        )

    def models(
        self,
        provider: str | None = None,
        capability: str | None = None,
        status: str | None = None,
    ) -> list[ModelInfo]:
        """Models in catalog order, filtered by every criterion given."""
        return [
            m
            for m in self._models
            if (provider is None or m.provider == provider)
            and (capability is None or m.has(capability))
            and (status is None or m.status == status)
        ]

    def models_of(self, provider_id: str) -> list[ModelInfo]:
        return self.models(provider=provider_id)

    def provider(self, id: str) -> ProviderInfo | None:
        return self._providers_by_id.get(id)

    def providers(self) -> list[ProviderInfo]:
        return list(self._providers)


def _described_by(
    ceiling: ModelInfo,
    model_id: str,
    capability: str,
    provider: ProviderInfo,
    offered: tuple[str, ...],
) -> ModelInfo:
    """A pass-through model: its own id, its provider's capabilities and those any of its
    peers offer (`offered`), the ceiling's price and size, no known limits (0), status
    `beta`."""
    return attrs.evolve(
        ceiling,
        id=model_id,
        upstream_id=model_id,
        type=cast(ModelType, CAPABILITY_TYPES.get(capability, ceiling.type)),
        name=model_id,
        created=0,
        status="beta",
        capabilities=tuple(
            dict.fromkeys((*provider.capabilities, *ceiling.capabilities, *offered))
        ),
        context_window=0,
        max_output_tokens=0,
        params_note=f"pass-through model: priced and sized like {ceiling.id}, the provider's "
        "dearest catalog model of its kind",
        aliases=(),
        recommended_for=(),
        fallback_chain=(),
        deprecation=None,
        limits={},
        parameters=ModelParameters(),
        endpoints=(),
        passthrough=True,
    )


# A vendor's dated snapshot: the model's name followed by its release date
# (`gpt-4o-2024-11-20`, `claude-opus-4-5-20251101`).
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


def _as_named(model: ModelInfo, name: str) -> ModelInfo:
    """The model as `name` asks for it. A dated snapshot is served by its vendor as it was
    released, and the undated name may point at another snapshot (`gpt-4o` is 2024-08-06,
    not 2024-11-20): a client pinning one must get that one, so its name is what goes
    upstream (and into the cache key), priced as its model. Other aliases are the
    gateway's own spellings of the model's upstream id."""
    if name == model.id or name == model.upstream_id or not _SNAPSHOT.search(name):
        return model
    return attrs.evolve(model, upstream_id=name)


def build_catalog(
    providers: Sequence[ProviderInfo],
    models: Sequence[ModelInfo],
    *,
    elsewhere: Collection[str] = (),
) -> Catalog:
    """Check cross-references and build the lookup tables; raise `CatalogError` if inconsistent.
    `elsewhere`: ids of models left out with their family's types, which a deprecation may
    still name as its replacement (OpenAI's speech models point at a realtime one)."""
    providers_by_id: dict[str, ProviderInfo] = {}
    for p in providers:
        if p.id in providers_by_id:
            raise CatalogError(f"duplicate provider id {p.id!r}")
        providers_by_id[p.id] = p
    by_name: dict[str, ModelInfo] = {}
    for m in models:
        if m.provider not in providers_by_id:
            raise CatalogError(f"model {m.id!r} names unknown provider {m.provider!r}")
        for name in (m.id, *m.aliases):
            if name in by_name:
                raise CatalogError(f"name {name!r} used by {by_name[name].id!r} and {m.id!r}")
            by_name[name] = _as_named(m, name)
    ids = {m.id: m for m in models}
    for m in models:
        _check_references(m, ids, elsewhere)
    return Catalog(
        providers=tuple(providers),
        models=tuple(models),
        by_name=types.MappingProxyType(by_name),
        providers_by_id=types.MappingProxyType(providers_by_id),
    )


def _check_references(
    model: ModelInfo, ids: Mapping[str, ModelInfo], elsewhere: Collection[str] = ()
) -> None:
    for target in model.fallback_chain:
        if target not in ids:
            raise CatalogError(f"model {model.id!r} falls back to unknown model {target!r}")
        if target == model.id:
            raise CatalogError(f"model {model.id!r} falls back to itself")
        if ids[target].type != model.type:
            raise CatalogError(f"model {model.id!r} falls back to {target!r} of another type")
    replacement = model.deprecation.replacement if model.deprecation is not None else None
    if replacement is not None and replacement not in ids and replacement not in elsewhere:
        raise CatalogError(f"model {model.id!r} names unknown replacement")


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    """Build a catalog from the decoded JSON document; raise `CatalogError` on bad data."""
    providers, models, retired = parse_parts(data)
    return build_catalog(providers, models).with_retired(retired)


@functools.cache
def load_catalog() -> Catalog:
    """The packaged catalog, parsed and validated once per process."""
    text = resources.files("providers").joinpath("data", "catalog.json").read_text("utf-8")
    return parse_catalog(json.loads(text))
