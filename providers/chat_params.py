"""Every parameter of the chat-completions request, and what it does to the answer (pure).

The list is OpenAI's (`openai.types.chat.CompletionCreateParams`); a test walks that
TypedDict, so a parameter OpenAI adds later fails it until it is classified here. Each
parameter says who acts on it (`vendor`: the adapters send or translate it, and
`providers.chat_support` says per vendor whether the chosen model can honour it;
`gateway`: the gateway itself honours it, whatever the vendor), whether it belongs in the
response cache key (it may change the answer) and, when it does not, why not.

`neutral` values ask nothing of the model (`n: 1`, `store: false`, `modalities:
["text"]`...): every vendor honours them by doing what it does anyway, so they are never
refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from providers.types import ChatRequest

Actor = Literal["vendor", "gateway"]


@attrs.frozen
class Parameter:
    name: str
    actor: Actor
    in_cache_key: bool
    note: str
    """What the gateway does with it; for a parameter outside the cache key, why it cannot
    change the answer."""
    field: str | None = None
    """The `ChatRequest` field holding it, when it has one (a vendor parameter always)."""
    neutral: tuple[Any, ...] = ()


def _vendor(
    name: str, note: str, *, neutral: tuple[Any, ...] = (), key: bool = True, field: str = ""
) -> Parameter:
    return Parameter(name, "vendor", key, note, field or name, neutral)


def _gateway(name: str, note: str, *, key: bool, field: str | None = None) -> Parameter:
    return Parameter(name, "gateway", key, note, field)


_ALL = (
    _gateway("messages", "validated, then translated by each adapter", key=True, field="messages"),
    _gateway(
        "model",
        "resolved to a provider and its model id; the key holds the resolved pair, so an "
        "alias and the id it names share entries",
        key=True,
        field="model",
    ),
    _gateway("stream", "how the answer is delivered, not what it says", key=False),
    _gateway(
        "stream_options",
        "`include_usage` adds a usage chunk the gateway writes itself; "
        "`include_obfuscation` pads the gateway's own chunks: neither touches the text",
        key=False,
    ),
    _gateway("functions", "deprecated; converted to `tools` (which are in the key)", key=True),
    _gateway("function_call", "deprecated; converted to `tool_choice` (in the key)", key=True),
    _vendor("temperature", "sampling temperature"),
    _vendor("top_p", "nucleus sampling"),
    _vendor("presence_penalty", "repetition penalty", neutral=(0, 0.0)),
    _vendor("frequency_penalty", "repetition penalty", neutral=(0, 0.0)),
    _vendor("stop", "stop sequences"),
    _vendor("max_tokens", "the answer's length bound"),
    _vendor("max_completion_tokens", "the same bound as `max_tokens`", field="max_tokens"),
    _vendor("n", "how many answers", neutral=(1,)),
    _vendor("seed", "deterministic sampling"),
    _vendor("logit_bias", "token biases", neutral=({},)),
    _vendor("logprobs", "log-probabilities in the answer", neutral=(False,)),
    _vendor("top_logprobs", "alternatives in the log-probabilities", neutral=(0,)),
    _vendor("tools", "callable functions"),
    _vendor("tool_choice", "which function must be called"),
    _vendor("parallel_tool_calls", "several calls in one answer", neutral=(True,)),
    _vendor("response_format", "JSON mode and structured outputs", neutral=({"type": "text"},)),
    _vendor("reasoning_effort", "how much the model reasons first"),
    _vendor("verbosity", "how long the answer is"),
    _vendor("modalities", "output modalities", neutral=(("text",), ["text"])),
    _vendor("audio", "spoken output"),
    _vendor("web_search_options", "the answer is grounded in a web search"),
    _vendor(
        "moderation",
        "the vendor moderates input and output (a blocked answer is another answer)",
    ),
    _vendor(
        "prediction",
        "Predicted Outputs only speed generation up: the model writes the tokens it "
        "would write anyway (the rejected prediction tokens are billed, not shown)",
        key=False,
    ),
    _vendor(
        "user",
        "an end-user id for the vendor's abuse monitoring; the gateway records it as the "
        "request's user (`_gateway.user_id`) whatever the vendor",
        key=False,
    ),
    _vendor(
        "safety_identifier",
        "an end-user id for the vendor's abuse monitoring, like `user`",
        key=False,
    ),
    _vendor(
        "metadata", "tags of a stored completion, invisible to the model", key=False, neutral=({},)
    ),
    _vendor(
        "store",
        "whether the vendor keeps the completion for its own products",
        key=False,
        neutral=(False,),
    ),
    _vendor(
        "service_tier",
        "which capacity serves the request (latency and price, not the model)",
        key=False,
        neutral=("auto", "default"),
    ),
    _vendor(
        "prompt_cache_key", "a hint for the vendor's prompt cache (speed and price)", key=False
    ),
    _vendor("prompt_cache_options", "the vendor's prompt-cache breakpoints", key=False),
    _vendor("prompt_cache_retention", "how long the vendor's prompt cache lasts", key=False),
)

PARAMETERS: Mapping[str, Parameter] = {p.name: p for p in _ALL}
"""Every chat-completions parameter by name, in the order the documentation lists them."""

VENDOR_PARAMETERS: tuple[Parameter, ...] = tuple(p for p in _ALL if p.actor == "vendor")


def value_of(request: ChatRequest, parameter: Parameter) -> Any:
    """The request's value of a vendor parameter (None when not asked)."""
    assert parameter.field is not None
    return getattr(request, parameter.field)


def asked(parameter: Parameter, value: Any) -> bool:
    """Whether `value` asks something of the model: set, and not one of the neutral values
    every model honours by doing what it does anyway."""
    return value is not None and not any(_same(value, n) for n in parameter.neutral)


def _same(value: Any, neutral: Any) -> bool:
    if isinstance(value, bool) != isinstance(neutral, bool):
        return False  # `0` is not `False`, nor `1` `True`
    if isinstance(value, tuple | list) and isinstance(neutral, tuple | list):
        return list(value) == list(neutral)
    return bool(value == neutral)
