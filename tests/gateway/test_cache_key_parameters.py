"""The response cache key holds every parameter that may change the answer, and only those.

The parameters are walked from the `openai` package's own TypedDict (through
`providers.chat_params.PARAMETERS`, which a test keeps equal to it): each has a sample
value here, so a parameter OpenAI adds later fails until it is given one and classified.
For each, two requests that differ only in it must have different keys when it is in the
key, and the same key when it is documented as not changing the answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.chat.cache import cache_key
from gateway.chat.input import parse_chat_body
from providers.chat_params import PARAMETERS

BASE: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]

SAMPLES: dict[str, dict[str, Any]] = {
    "messages": {"messages": [{"role": "user", "content": "And of Spain?"}]},
    "model": {},  # the resolved model: see test_the_resolved_model_is_in_the_key
    "stream": {"stream": True},
    "stream_options": {"stream": True, "stream_options": {"include_usage": True}},
    "functions": {"functions": [{"name": "f", "parameters": {"type": "object"}}]},
    "function_call": {
        "functions": [{"name": "f", "parameters": {"type": "object"}}],
        "function_call": {"name": "f"},
    },
    "temperature": {"temperature": 0.2},
    "top_p": {"top_p": 0.5},
    "presence_penalty": {"presence_penalty": 0.5},
    "frequency_penalty": {"frequency_penalty": 0.5},
    "stop": {"stop": ["END"]},
    "max_tokens": {"max_tokens": 10},
    "max_completion_tokens": {"max_completion_tokens": 10},
    "n": {"n": 2},
    "seed": {"seed": 7},
    "logit_bias": {"logit_bias": {"50256": -100}},
    "logprobs": {"logprobs": True},
    "top_logprobs": {"logprobs": True, "top_logprobs": 3},
    "tools": {"tools": TOOLS},
    "tool_choice": {"tools": TOOLS, "tool_choice": "required"},
    "parallel_tool_calls": {"tools": TOOLS, "parallel_tool_calls": False},
    "response_format": {"response_format": {"type": "json_object"}},
    "reasoning_effort": {"reasoning_effort": "high"},
    "verbosity": {"verbosity": "low"},
    "modalities": {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
    "audio": {"modalities": ["text", "audio"], "audio": {"voice": "echo", "format": "wav"}},
    "web_search_options": {"web_search_options": {"search_context_size": "high"}},
    "moderation": {"moderation": {"model": "omni-moderation-latest"}},
    "prediction": {"prediction": {"type": "content", "content": "Paris"}},
    "user": {"user": "user-42"},
    "safety_identifier": {"safety_identifier": "hash-42"},
    "metadata": {"metadata": {"team": "red"}},
    "store": {"store": True},
    "service_tier": {"service_tier": "flex"},
    "prompt_cache_key": {"prompt_cache_key": "conversation-1"},
    "prompt_cache_options": {"prompt_cache_options": {"mode": "explicit"}},
    "prompt_cache_retention": {"prompt_cache_retention": "24h"},
}
"""One request per parameter asking something other than the base request."""

# Parameters whose sample needs another parameter set on both sides of the comparison,
# so that only the parameter itself differs.
CONTEXT: dict[str, dict[str, Any]] = {
    "stream_options": {"stream": True},
    "function_call": {"functions": [{"name": "f", "parameters": {"type": "object"}}]},
    "top_logprobs": {"logprobs": True},
    "tool_choice": {"tools": TOOLS},
    "parallel_tool_calls": {"tools": TOOLS},
    "audio": {
        "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"},
    },
}


def key_of(body: dict[str, Any], upstream_model: str = "gpt-4o-mini") -> str:
    params = parse_chat_body(body)
    return cache_key(
        workspace_id="ws", provider_id="openai", upstream_model=upstream_model,
        request=params.request,
    )  # fmt: skip


def test_every_parameter_has_a_sample() -> None:
    assert set(SAMPLES) == set(PARAMETERS)


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_a_parameter_is_in_the_key_exactly_when_it_may_change_the_answer(name: str) -> None:
    parameter = PARAMETERS[name]
    before = BASE | CONTEXT.get(name, {})
    after = before | SAMPLES[name]
    if name == "model":
        pytest.skip("the resolved model is tested below")
    differ = key_of(before) != key_of(after)
    assert differ is parameter.in_cache_key, (name, parameter.note)


def test_the_resolved_model_is_in_the_key() -> None:
    assert PARAMETERS["model"].in_cache_key
    assert key_of(BASE) != key_of(BASE, upstream_model="gpt-4o")


def test_the_two_spellings_of_the_length_bound_share_a_key() -> None:
    assert key_of(BASE | {"max_tokens": 10}) == key_of(BASE | {"max_completion_tokens": 10})


@pytest.mark.parametrize(
    ("same", "other"),
    [
        ({"n": 1}, {}),
        ({"logprobs": False}, {}),
        ({"modalities": ["text"]}, {}),
        ({"logit_bias": {}}, {}),
        ({"tools": TOOLS, "parallel_tool_calls": True}, {"tools": TOOLS}),
        ({"parallel_tool_calls": False}, {}),  # without tools it cannot matter
    ],
)
def test_spellings_of_the_defaults_share_a_key(same: dict[str, Any], other: dict[str, Any]) -> None:
    assert key_of(BASE | same) == key_of(BASE | other)
