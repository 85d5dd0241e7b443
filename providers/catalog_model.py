"""The catalog's value types: a provider, a model, its prices, parameters and lifecycle.

Prices follow the vendors' own units. `Pricing.input_per_1m` / `output_per_1m` are USD per
million tokens (the spec's fields). Models billed per character, minute of audio, page or search
carry `unit` and `unit_price` (USD per one unit); their token prices are zero unless the vendor
also publishes token prices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

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
ENDPOINTS: frozenset[str] = frozenset({"chat_completions", "responses", "messages"})
"""The front doors a model may be limited to (`ModelInfo.endpoints`)."""

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
    endpoints: tuple[str, ...] = ()
    """The front doors that serve it; empty for all. OpenAI's Responses-only models
    (`o3-pro`, `gpt-5.5-pro`...) are `("responses",)`: OpenAI refuses them on chat
    completions, so the gateway does too, and reaches them through OpenAI's `/responses`."""
    passthrough: bool = False
    """A model the catalog does not list, allowed by the operator (see `passthrough_info`):
    its facts are its provider's, its price the provider's dearest (a ceiling)."""

    def has(self, capability: str) -> bool:
        return capability in self.capabilities

    def served_on(self, endpoint: str) -> bool:
        """Whether a request through `endpoint` (one of `ENDPOINTS`) may name it."""
        return not self.endpoints or endpoint in self.endpoints

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
