"""Which chat parameters each vendor's models can honour (pure): the table behind
`docs/models-and-parameters.md`.

For every vendor parameter (`providers.chat_params.VENDOR_PARAMETERS`) each chat vendor
has a check. The gateway asks `refusal(...)` before any call: None means the model can do
everything the request asks (each adapter sends or translates it), otherwise it names the
first parameter the model cannot honour and why. The gateway then skips that candidate
(a fallback) or refuses the request with a 400 naming the parameter (the model the client
chose): a parameter is never dropped in silence.

A check sees the value (already known to be `asked`: neutral values never reach it), the
whole request (some parameters depend on others: Claude's thinking takes no temperature)
and the model's catalog entry (its capabilities and `parameters` facts), or None for a
model the catalog does not describe (a pass-through id), which is given the benefit of
the doubt where the answer depends on the model: the vendor decides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from providers.catalog import ModelInfo
from providers.chat_params import VENDOR_PARAMETERS, Parameter, asked
from providers.types import ChatRequest

Check = Callable[[Any, ChatRequest, ModelInfo | None], str | None]

THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 65536,
}
"""Thinking-token budgets for the effort levels, where a vendor takes a budget: Google's
own mapping for Gemini 2.5 in its OpenAI compatibility (low 1,024, medium 8,192, high
24,576), extended both ways by the gateway (minimal, xhigh, max)."""
ANTHROPIC_MIN_BUDGET = 1024


@attrs.frozen
class Refusal:
    """A parameter the chosen model cannot honour, with the value asked and the reason."""

    param: str
    value: Any
    reason: str

    def message(self, model: str) -> str:
        return f"'{self.param}' cannot be honoured by the model '{model}': {self.reason}."


# Each vendor parameter with the request field that holds it, looked up once: `refusal`
# reads all 31 for every chat request, and most are unset (None: nothing asked).
_VENDOR_FIELDS: tuple[tuple[Parameter, str], ...] = tuple(
    (p, p.field or p.name) for p in VENDOR_PARAMETERS
)


Asked = tuple[tuple[Parameter, Any], ...]


def asked_parameters(request: ChatRequest) -> Asked:
    """The vendor parameters `request` asks something with, and their values: most chat
    requests ask none. Read once per request, so that the candidates' `refusal` checks
    (every target of the chain) do not each read all 31 fields again."""
    found = []
    for parameter, field in _VENDOR_FIELDS:
        value = getattr(request, field)
        if value is not None and asked(parameter, value):
            found.append((parameter, value))
    return tuple(found)


def refusal(
    provider_id: str, request: ChatRequest, model: ModelInfo | None, asking: Asked | None = None
) -> Refusal | None:
    """The first parameter `request` asks that the provider's model cannot honour, or None
    (`asking`: the request's `asked_parameters`, when the caller has them already).

    A vendor without a table here (a test double) claims nothing and refuses nothing.
    """
    table = SUPPORT.get(provider_id)
    if table is None:
        return None
    for parameter, value in asked_parameters(request) if asking is None else asking:
        reason = table[parameter.name](value, request, model)
        if reason is not None:
            return Refusal(parameter.name, value, reason)
    return None


# -- building blocks -----------------------------------------------------------------------


def _sent(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    return None


def _refused(reason: str) -> Check:
    def check(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
        return reason

    return check


def _within(low: float, high: float, vendor: str) -> Check:
    def check(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
        if low <= value <= high:
            return None
        return f"{vendor} takes values from {low:g} to {high:g}"

    return check


def _both(first: Check, second: Check) -> Check:
    def check(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
        return first(value, request, model) or second(value, request, model)

    return check


def samples_freely(request: ChatRequest, model: ModelInfo | None) -> bool:
    """Whether the model takes sampling settings other than the defaults for this request
    (a model the catalog does not describe: the vendor decides)."""
    sampling = "always" if model is None else model.parameters.sampling
    if sampling == "without_reasoning":
        return request.reasoning_effort in (None, "none")
    return sampling == "always"


def _sampling(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    """A sampling setting other than the default, for a model that samples its own way."""
    if samples_freely(request, model):
        return None
    if model is not None and model.parameters.sampling == "without_reasoning":
        return "the model takes it only with 'reasoning_effort': 'none'"
    return "the model fixes its own sampling (only the default is accepted)"


def _reasoning_model_refuses(
    value: Any, request: ChatRequest, model: ModelInfo | None
) -> str | None:
    """OpenAI's reasoning models take no stop sequences, biases or log-probabilities."""
    if samples_freely(request, model):
        return None
    return "OpenAI's reasoning models do not support it while they reason"


def _effort(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    if model is None:
        return None
    efforts = model.parameters.reasoning_efforts
    if not efforts:
        return "the model has no reasoning control"
    if value not in efforts:
        return f"the model accepts {', '.join(efforts)}"
    return None


def _verbosity(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    verbosities = () if model is None else model.parameters.verbosities
    if model is None or value in verbosities:
        return None
    if not verbosities:
        return "only OpenAI's GPT-5 models take it"
    return f"the model accepts {', '.join(verbosities)}"


def _prediction(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    if model is None or model.parameters.prediction:
        return None
    return "the model does not take Predicted Outputs"


def _neutral_tier(vendor: str) -> Check:
    """Only the neutral tiers: `auto`, and `default` (sent as standard capacity where the
    vendor has a field for it)."""
    return _refused(f"{vendor} takes auto or default (standard capacity) only")


def _json_mode(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    """JSON output (`json_object`, `json_schema`) from a model that has JSON mode."""
    if value.get("type") == "text" or model is None or model.has("json_mode"):
        return None
    return "the model has no JSON mode (see /v1/models?capability=json_mode)"


def _speaks(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    """Spoken answers (`modalities: ["audio"]`, `audio`) from OpenAI's audio models only."""
    if model is None or model.has("audio"):
        return None
    return _NOT_AN_AUDIO_MODEL


def thinks(request: ChatRequest) -> bool:
    """Whether the request turns a model's reasoning on (any effort but `none`)."""
    return request.reasoning_effort not in (None, "none")


# -- per vendor ----------------------------------------------------------------------------

_NO_AUDIO = (
    "only OpenAI's audio models speak in chat (see /v1/models?capability=audio); "
    "/v1/audio/speech speaks any text"
)
_NOT_AN_AUDIO_MODEL = (
    "the model answers in text; OpenAI's audio models speak (see /v1/models?capability=audio)"
)
_NO_SEARCH = "web search is a tool of OpenAI's search models only, none of which the gateway offers"
_VENDOR_CACHE = "{vendor} has no prompt-cache key or settings (it caches prefixes itself)"


def _common(vendor: str) -> dict[str, Check]:
    """What every vendor but OpenAI does the same way: refusals of OpenAI's own products."""
    cache = _refused(_VENDOR_CACHE.format(vendor=vendor))
    return {
        "logit_bias": _refused("token ids are OpenAI's tokenizer's, which this model does not use"),
        "modalities": _refused(_NO_AUDIO),
        "audio": _refused(_NO_AUDIO),
        "web_search_options": _refused(_NO_SEARCH),
        "moderation": _refused(f"{vendor} has no moderation setting"),
        "prediction": _refused(f"{vendor} has no Predicted Outputs"),
        "user": _sent,  # the gateway records it; sent where the vendor has a field
        "safety_identifier": _sent,
        "metadata": _refused(f"{vendor} keeps no completions to tag"),
        "store": _refused(f"{vendor} keeps no completions"),
        "service_tier": _neutral_tier(vendor),
        "prompt_cache_key": cache,
        "prompt_cache_options": cache,
        "prompt_cache_retention": cache,
        "verbosity": _verbosity,
        "max_tokens": _sent,
        "max_completion_tokens": _sent,
        "stop": _sent,
        "tools": _sent,
        "tool_choice": _sent,
        "response_format": _json_mode,
    }


OPENAI: Mapping[str, Check] = {
    **{p.name: _sent for p in VENDOR_PARAMETERS},
    "temperature": _sampling,
    "top_p": _sampling,
    "presence_penalty": _sampling,
    "frequency_penalty": _sampling,
    "stop": _reasoning_model_refuses,
    "logit_bias": _reasoning_model_refuses,
    "logprobs": _reasoning_model_refuses,
    "top_logprobs": _reasoning_model_refuses,
    "reasoning_effort": _effort,
    "verbosity": _verbosity,
    "prediction": _prediction,
    "response_format": _json_mode,
    "modalities": _speaks,
    "audio": _speaks,
    "web_search_options": _refused(_NO_SEARCH),
}


def _anthropic_temperature(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    if thinks(request) and value != 1:
        return "Claude's thinking (asked by 'reasoning_effort') takes no other temperature"
    return _within(0, 1, "Anthropic")(value, request, model)


def _anthropic_top_p(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    if thinks(request) and value < 0.95:
        return "Claude's thinking (asked by 'reasoning_effort') takes top_p from 0.95 to 1"
    return None


def _anthropic_effort(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    refused = _effort(value, request, model)
    if refused or value == "none":
        return refused
    if isinstance(request.tool_choice, Mapping) or request.tool_choice == "required":
        return "Claude cannot think when 'tool_choice' forces a call"
    budgeted = model is not None and model.parameters.thinking == "budget"
    if budgeted and request.max_tokens is not None and request.max_tokens <= ANTHROPIC_MIN_BUDGET:
        return f"a thinking budget needs 'max_tokens' above {ANTHROPIC_MIN_BUDGET}"
    return None


GEMINI_TIERS: Mapping[str, str | None] = {
    "auto": None,
    "default": "standard",
    "flex": "flex",
    "priority": "priority",
    "fast": "priority",  # OpenAI's fast mode is its priority processing
}
"""OpenAI's service tiers as Gemini's `serviceTier` (None: not sent, Gemini chooses)."""


def _gemini_tier(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    return None if value in GEMINI_TIERS else "Gemini offers flex, standard or priority"


ANTHROPIC: Mapping[str, Check] = {
    **_common("Anthropic"),
    "temperature": _both(_sampling, _anthropic_temperature),
    "top_p": _both(_sampling, _anthropic_top_p),
    "presence_penalty": _refused("Anthropic has no repetition penalties"),
    "frequency_penalty": _refused("Anthropic has no repetition penalties"),
    "n": _refused("Anthropic writes one answer per request"),
    "seed": _refused("Anthropic has no seed"),
    "logprobs": _refused("Anthropic does not report log-probabilities"),
    "top_logprobs": _refused("Anthropic does not report log-probabilities"),
    "parallel_tool_calls": _sent,  # false: tool_choice.disable_parallel_tool_use
    "reasoning_effort": _anthropic_effort,
    "service_tier": _neutral_tier("Anthropic"),
}


GOOGLE: Mapping[str, Check] = {
    **_common("Google"),
    "temperature": _within(0, 2, "Gemini"),
    "top_p": _sent,
    "presence_penalty": _sent,
    "frequency_penalty": _sent,
    "n": _within(1, 8, "Gemini's candidateCount"),
    "seed": _sent,
    "logprobs": _sent,  # responseLogprobs
    "top_logprobs": _within(0, 20, "Gemini's logprobs"),
    "parallel_tool_calls": _refused("Gemini has no switch for one call per answer"),
    "reasoning_effort": _effort,
    "service_tier": _gemini_tier,
    "store": _sent,  # Gemini's `store` (request logging)
    "metadata": _sent,  # Gemini's `labels`
}


MISTRAL: Mapping[str, Check] = {
    **_common("Mistral"),
    "temperature": _sent,
    "top_p": _sent,
    "presence_penalty": _sent,
    "frequency_penalty": _sent,
    "n": _sent,
    "seed": _sent,  # random_seed
    "logprobs": _sent,
    "top_logprobs": _sent,
    "parallel_tool_calls": _sent,
    "reasoning_effort": _effort,
    "prediction": _prediction,
    "metadata": _sent,
    "prompt_cache_key": _sent,
    "service_tier": _neutral_tier("Mistral"),
}


def _cohere_top_p(value: Any, request: ChatRequest, model: ModelInfo | None) -> str | None:
    if value == 1 or 0.01 <= value <= 0.99:
        return None  # 1 (no cut) is sent as Cohere's highest, 0.99
    return "Cohere's p takes values from 0.01 to 0.99"


COHERE: Mapping[str, Check] = {
    **_common("Cohere"),
    "temperature": _sent,
    "top_p": _cohere_top_p,
    "presence_penalty": _within(0, 1, "Cohere"),
    "frequency_penalty": _within(0, 1, "Cohere"),
    "n": _refused("Cohere writes one answer per request"),
    "seed": _sent,
    "logprobs": _refused("Cohere reports log-probabilities per token id, without the text"),
    "top_logprobs": _refused("Cohere reports no alternatives"),
    "parallel_tool_calls": _refused("Cohere has no switch for one call per answer"),
    "reasoning_effort": _effort,
}

SUPPORT: Mapping[str, Mapping[str, Check]] = {
    "openai": OPENAI,
    "anthropic": ANTHROPIC,
    "google": GOOGLE,
    "mistral": MISTRAL,
    "cohere": COHERE,
}
"""The chat vendors' tables; each names every vendor parameter (a test checks it)."""
