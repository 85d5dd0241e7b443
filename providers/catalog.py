"""The model and provider catalog: what each upstream offers, what it costs, how it falls back.

The catalog is data (`providers/data/catalog.json`, sources in `SOURCES.md`) read once and
checked on load: a catalog whose fallback chains name unknown models, whose models name unknown
providers, or whose ids and aliases collide is refused with `CatalogError`. Everything here is
pure; `load_catalog()` is the only function that touches the package data, and it caches its
frozen result.

Prices follow the vendors' own units. `Pricing.input_per_1m` / `output_per_1m` are USD per
million tokens (the spec's fields). Models billed per character, minute of audio, page or search
carry `unit` and `unit_price` (USD per one unit); their token prices are zero unless the vendor
also publishes token prices.
"""

from __future__ import annotations

import functools
import json
import re
import types
from collections.abc import Collection, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, Literal, NotRequired, Protocol, TypedDict, TypeVar, cast

import attrs

from providers.passthrough import (
    CAPABILITY_TYPES,
    PassthroughRule,
    allowed,
    parse_passthrough,
    price_rank,
)
from providers.types.usage import Usage

ModelType = Literal["chat", "embedding", "rerank", "speech", "transcription", "ocr", "realtime"]
ModelStatus = Literal["available", "deprecated", "beta"]
PriceUnit = Literal["token", "character", "minute", "page", "search"]

CAPABILITIES: frozenset[str] = frozenset(
    {
        "chat",
        "vision",
        "file_input",
        "audio_input",
        "audio",
        "function_calling",
        "json_mode",
        "streaming",
        "embeddings",
        "speech",
        "transcription",
        "rerank",
        "ocr",
        "realtime",
        "reasoning",
    }
)
MODEL_TYPES: frozenset[str] = frozenset(
    {"chat", "embedding", "rerank", "speech", "transcription", "ocr", "realtime"}
)
MODEL_STATUSES: frozenset[str] = frozenset({"available", "deprecated", "beta"})
PRICE_UNITS: frozenset[str] = frozenset({"token", "character", "minute", "page", "search"})

COST_SIGNIFICANT_DIGITS = 15


def round_cost(usd: float) -> float:
    """A USD amount cleared of binary noise (0.1 + 0.2) and nothing more: 15 significant
    digits, what a float carries exactly. Never a fixed number of decimals, which cut the
    last digits of small costs (a request of 1.23e-05 read as 1.2e-05 at six decimals):
    every digit of a price, and of a cost or a sum of costs, stays (below $10,000,000,
    15 digits hold 8 decimals, a catalog price per token's finest). Every cost the
    gateway computes, stores or renders goes through here."""
    return float(_COST_FORMAT % usd)  # a %-format made once: a request rounds six times


_COST_FORMAT = f"%.{COST_SIGNIFICANT_DIGITS}g"


class CatalogError(ValueError):
    """The catalog data is inconsistent; the message names the first offending entry."""


@attrs.frozen(slots=True)
class CostBreakdown:
    """USD cost of one request, each part through `round_cost`."""

    input: float
    output: float
    total: float


@attrs.frozen(slots=True)
class Pricing:
    """List prices. Token prices per 1M tokens; other units priced per one unit."""

    input_per_1m: float
    output_per_1m: float
    unit: PriceUnit = "token"
    unit_price: float | None = None
    # A realtime model's audio tokens, per 1M; None where audio is not priced apart.
    audio_input_per_1m: float | None = None
    audio_output_per_1m: float | None = None


@attrs.frozen(slots=True)
class Deprecation:
    """Lifecycle facts of a deprecated model; dates are YYYY-MM-DD strings."""

    announced_date: str
    sunset_date: str
    replacement: str
    migration_guide: str


@attrs.frozen(slots=True)
class Retirement:
    """A model id its vendor no longer serves (the catalog's `retired` list): why a request
    naming it gets a 404 and what to use instead. `retired_on` is the shutdown date
    (YYYY-MM-DD); None for an id the vendor never served (an SDK keeps some for
    compatibility)."""

    id: str
    provider: str
    retired_on: str | None
    replacement: str

    def message(self) -> str:
        """The 404's message: the date, or that the vendor never served it, and what to use."""
        when = (
            f"was retired by its provider on {self.retired_on}"
            if self.retired_on is not None
            else "is not a model its provider serves"
        )
        return f"The model '{self.id}' {when}; use '{self.replacement}' instead."


@attrs.frozen(slots=True)
class ProviderInfo:
    """One upstream vendor: where its API lives and where its inference runs.

    `api_key_env` lists the environment variables that may hold its key, preferred first.
    `grid_region` is a key of the footprint table's grid intensities; `pue` the data-centre
    Power Usage Effectiveness used for its energy estimates.
    """

    id: str
    name: str
    base_url: str
    api_key_env: tuple[str, ...]
    capabilities: tuple[str, ...]
    grid_region: str
    pue: float
    status_url: str


THINKING_STYLES: frozenset[str] = frozenset({"budget", "effort", "level"})
SAMPLING: frozenset[str] = frozenset({"always", "never", "without_reasoning"})
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


@attrs.frozen(slots=True)
class ModelParameters:
    """What one model does with the chat parameters whose support differs by model,
    from the vendor's model page (the catalog's `parameters` object).

    `sampling`: whether the model takes a temperature, top_p and penalties other than the
    defaults: `always`, `never` (OpenAI's o-series and GPT-5, Claude from Opus 4.7 on), or
    `without_reasoning` (GPT-5.4 and later: only with `reasoning_effort` none).
    `reasoning_efforts`: the `reasoning_effort` values it accepts (none: it has no such
    control); `thinking` says how its vendor spells them (`budget`: a token budget,
    `effort`: an effort level, `level`: Gemini's thinking level). `verbosities`: the
    `verbosity` values it accepts. `prediction`: it takes Predicted Outputs.
    """

    sampling: str = "always"
    reasoning_efforts: tuple[str, ...] = ()
    thinking: str | None = None
    verbosities: tuple[str, ...] = ()
    prediction: bool = False


@attrs.frozen(slots=True)
class ModelInfo:
    """One model as the gateway exposes it.

    `id` is the gateway's model id; `upstream_id` the id sent to the vendor. `quality` (0-100)
    is an ordinal routing hint comparable only between models of the same `type`.
    `active_params_b` / `total_params_b` (billions) drive the energy estimate;
    `params_estimated` is true when the vendor does not publish them (closed models).
    For speech models `context_window` counts input characters; `limits` holds other
    per-model bounds (`dimensions`, `max_pages`, `max_file_mb`, ...).
    """

    id: str
    provider: str
    owned_by: str
    upstream_id: str
    type: ModelType
    name: str
    created: int
    status: ModelStatus
    capabilities: tuple[str, ...]
    context_window: int
    max_output_tokens: int
    pricing: Pricing
    quality: int
    active_params_b: float
    total_params_b: float
    params_estimated: bool
    params_note: str
    aliases: tuple[str, ...] = ()
    recommended_for: tuple[str, ...] = ()
    fallback_chain: tuple[str, ...] = ()
    deprecation: Deprecation | None = None
    limits: Mapping[str, int] = attrs.field(factory=dict)
    parameters: ModelParameters = ModelParameters()
    passthrough: bool = False
    """A model the catalog does not list, allowed by the operator (see `passthrough_info`):
    its facts are its provider's, its price the provider's dearest (a ceiling)."""

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def cost(self, prompt_tokens: int, completion_tokens: int) -> CostBreakdown:
        """USD cost of the tokens at list price (zero parts for models not billed by token)."""
        if prompt_tokens < 0 or completion_tokens < 0:
            raise ValueError("token counts must not be negative")
        unrounded_in = prompt_tokens * self.pricing.input_per_1m / 1_000_000
        unrounded_out = completion_tokens * self.pricing.output_per_1m / 1_000_000
        return CostBreakdown(
            input=round_cost(unrounded_in),
            output=round_cost(unrounded_out),
            total=round_cost(unrounded_in + unrounded_out),
        )

    def metered_cost(self, usage: Usage) -> CostBreakdown:
        """USD cost of everything `usage` measured, at list price: its tokens, plus the
        quantity of the model's billing unit (characters, minutes of audio, pages, search
        units) at `unit_price`, counted as input. The one pricing rule for every family."""
        tokens = self._token_cost(usage)
        quantity = _unit_quantity(self.pricing.unit, usage)
        if not quantity or self.pricing.unit_price is None:
            return tokens
        units = self.unit_cost(quantity)
        return CostBreakdown(
            input=round_cost(tokens.input + units),
            output=tokens.output,
            total=round_cost(tokens.total + units),
        )

    def _token_cost(self, usage: Usage) -> CostBreakdown:
        """The tokens' cost, audio tokens at the audio price where the model has one (a
        realtime model's speech costs 8x its text on OpenAI's list)."""
        pricing = self.pricing
        audio_in = usage.audio_prompt_tokens if pricing.audio_input_per_1m is not None else 0
        audio_out = usage.audio_completion_tokens if pricing.audio_output_per_1m is not None else 0
        if not (audio_in or audio_out):
            return self.cost(usage.prompt_tokens, usage.completion_tokens)
        if min(audio_in, audio_out, usage.prompt_tokens - audio_in) < 0 or (
            usage.completion_tokens < audio_out
        ):
            raise ValueError("audio tokens are a part of the token counts")
        unrounded_in = (
            (usage.prompt_tokens - audio_in) * pricing.input_per_1m
            + audio_in * (pricing.audio_input_per_1m or 0.0)
        ) / 1_000_000
        unrounded_out = (
            (usage.completion_tokens - audio_out) * pricing.output_per_1m
            + audio_out * (pricing.audio_output_per_1m or 0.0)
        ) / 1_000_000
        return CostBreakdown(
            input=round_cost(unrounded_in),
            output=round_cost(unrounded_out),
            total=round_cost(unrounded_in + unrounded_out),
        )

    def unit_cost(self, quantity: float) -> float:
        """USD cost of `quantity` billing units (characters, minutes, pages, searches)."""
        if quantity < 0:
            raise ValueError("quantity must not be negative")
        if self.pricing.unit_price is None:
            raise ValueError(f"{self.id} is billed per token; use cost()")
        return round_cost(quantity * self.pricing.unit_price)


def _unit_quantity(unit: PriceUnit, usage: Usage) -> float:
    """How many of a non-token billing unit `usage` holds (0 for token-billed models)."""
    if unit == "character":
        return usage.characters
    if unit == "minute":
        return usage.audio_seconds / 60
    if unit == "page":
        return usage.pages
    if unit == "search":
        return usage.searches
    return 0


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
        return _prefixed(self._by_name, id_or_alias)

    def retired(self, name: str) -> Retirement | None:
        """The retirement of `name` (an id, or `provider/id` of its provider), if its vendor
        shut it down: a 404 that says when and names the replacement, not a bare one."""
        found = self._retired.get(name)
        if found is not None or "/" not in name:
            return found
        return _prefixed(self._retired, name)

    def with_retired(self, retired: Iterable[Retirement]) -> Catalog:
        """This catalog knowing the `retired` ids; `CatalogError` if one is still served,
        names another provider's model as replacement, or is listed twice."""
        table: dict[str, Retirement] = {}
        for r in retired:
            replacement = self._by_name.get(r.replacement)
            if r.id in self._by_name or r.id in table:
                raise CatalogError(f"retired id {r.id!r} is also a catalog name or repeated")
            if replacement is None or replacement.id != r.replacement:
                raise CatalogError(f"retired id {r.id!r} names unknown replacement")
            if r.provider not in self._providers_by_id:
                raise CatalogError(f"retired id {r.id!r} names unknown provider {r.provider!r}")
            table[r.id] = r
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
        return _described_by(ceiling, model_id, capability, self._providers_by_id[provider])

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


class _OfProvider(Protocol):
    @property
    def provider(self) -> str: ...


_Named = TypeVar("_Named", bound=_OfProvider)


def _prefixed(table: Mapping[str, _Named], name: str) -> _Named | None:
    """The entry of `provider/id` in `table` (keyed by bare ids) when it is `provider`'s:
    a prefix naming another provider finds nothing."""
    provider, _, bare = name.partition("/")
    found = table.get(bare)
    return found if found is not None and found.provider == provider else None


def _described_by(
    ceiling: ModelInfo, model_id: str, capability: str, provider: ProviderInfo
) -> ModelInfo:
    """A pass-through model: its own id, its provider's capabilities, the ceiling's price
    and size, no known limits (0), status `beta`."""
    return attrs.evolve(
        ceiling,
        id=model_id,
        upstream_id=model_id,
        type=cast(ModelType, CAPABILITY_TYPES.get(capability, ceiling.type)),
        name=model_id,
        created=0,
        status="beta",
        capabilities=tuple(dict.fromkeys((*provider.capabilities, *ceiling.capabilities))),
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


# ---------------------------------------------------------------------------------- parsing


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    """Build a catalog from the decoded JSON document; raise `CatalogError` on bad data."""
    try:
        providers = [_parse_provider(p) for p in data["providers"]]
        names = {p.id: p.name for p in providers}
        models = [_parse_model(m, names) for m in data["models"]]
        retired = [_parse_retirement(r) for r in data.get("retired", ())]
    except (KeyError, TypeError) as exc:
        raise CatalogError(f"malformed catalog entry: {exc!r}") from exc
    return build_catalog(providers, models).with_retired(retired)


@functools.cache
def load_catalog() -> Catalog:
    """The packaged catalog, parsed and validated once per process."""
    text = resources.files("providers").joinpath("data", "catalog.json").read_text("utf-8")
    return parse_catalog(json.loads(text))


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


# ------------------------------------------------------------------------------ API shape


class PricingObject(TypedDict):
    """Prices in USD: per million input and output tokens, or per `unit` of the work."""

    input_per_1m: float
    output_per_1m: float
    unit: NotRequired[str]
    unit_price: NotRequired[float]
    audio_input_per_1m: NotRequired[float]
    audio_output_per_1m: NotRequired[float]


class DeprecationObject(TypedDict):
    """A deprecated model's dates (YYYY-MM-DD), its replacement and how to move."""

    announced_date: str
    sunset_date: str
    replacement: str
    migration_guide: str


class ModelService(TypedDict):
    """The gateway's facts about a model: provider, capabilities, limits, prices; the
    single-model read adds aliases, what it is recommended for and its fallback chain."""

    provider: str
    capabilities: list[str]
    context_window: int | None
    max_output_tokens: int | None
    pricing: PricingObject
    status: ModelStatus
    deprecation: NotRequired[DeprecationObject]
    aliases: NotRequired[list[str]]
    recommended_for: NotRequired[list[str]]
    fallback_chain: NotRequired[list[str]]


class ModelObject(TypedDict):
    """The spec's Model object (OpenAI's, with the gateway's `service`)."""

    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    service: ModelService


def model_to_api(model: ModelInfo, detail: bool) -> ModelObject:
    """The spec's Model object; `detail` adds the single-model read's extra fields."""
    service: ModelService = {
        "provider": model.provider,
        "capabilities": list(model.capabilities),
        "context_window": model.context_window,
        "max_output_tokens": model.max_output_tokens,
        "pricing": _pricing_to_api(model.pricing),
        "status": model.status,
    }
    if model.deprecation is not None:
        service["deprecation"] = cast(DeprecationObject, attrs.asdict(model.deprecation))
    if detail:
        service["aliases"] = list(model.aliases)
        service["recommended_for"] = list(model.recommended_for)
        service["fallback_chain"] = list(model.fallback_chain)
    return {
        "id": model.id,
        "object": "model",
        "created": model.created,
        "owned_by": model.owned_by,
        "service": service,
    }


def _pricing_to_api(pricing: Pricing) -> PricingObject:
    out: PricingObject = {
        "input_per_1m": pricing.input_per_1m,
        "output_per_1m": pricing.output_per_1m,
    }
    # Not in the spec's list, but a 0/0 token price would misstate audio, OCR and rerank costs.
    if pricing.unit_price is not None:
        out["unit"] = pricing.unit
        out["unit_price"] = pricing.unit_price
    if pricing.audio_input_per_1m is not None:
        out["audio_input_per_1m"] = pricing.audio_input_per_1m
    if pricing.audio_output_per_1m is not None:
        out["audio_output_per_1m"] = pricing.audio_output_per_1m
    return out
