"""Every OpenAI chat parameter is classified, and every chat vendor decides each one.

The list comes from the installed `openai` package's own request TypedDict, so a
parameter OpenAI adds later fails here until `providers.chat_params` classifies it and
every vendor's table in `providers.chat_support` says whether it can honour it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import completion_create_params

from providers.catalog import ModelInfo, load_catalog
from providers.chat_params import PARAMETERS, VENDOR_PARAMETERS, asked
from providers.chat_support import SUPPORT, refusal
from providers.types import ChatRequest

DOC = Path(__file__).parents[2] / "docs" / "models-and-parameters.md"
HELLO = [{"role": "user", "content": "hi"}]


def openai_parameters() -> set[str]:
    base = completion_create_params.CompletionCreateParamsBase.__annotations__
    streaming = completion_create_params.CompletionCreateParamsStreaming.__annotations__
    return set(base) | set(streaming)


def test_every_openai_parameter_is_classified() -> None:
    assert openai_parameters() - set(PARAMETERS) == set(), "classify it in chat_params"
    assert set(PARAMETERS) - openai_parameters() == set(), "not an OpenAI parameter"


@pytest.mark.parametrize("vendor", sorted(SUPPORT))
def test_every_vendor_decides_every_vendor_parameter(vendor: str) -> None:
    assert {p.name for p in VENDOR_PARAMETERS} == set(SUPPORT[vendor])


def test_a_parameter_outside_the_cache_key_says_why() -> None:
    for parameter in PARAMETERS.values():
        assert parameter.note, parameter.name
        if parameter.actor == "vendor":
            assert parameter.field in ChatRequest.__attrs_attrs__.__dict__ or hasattr(
                ChatRequest, parameter.field or ""
            ), parameter.name


def test_the_documentation_table_names_every_parameter() -> None:
    text = DOC.read_text("utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))
    assert set(PARAMETERS) <= rows, sorted(set(PARAMETERS) - rows)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("n", 1, False),
        ("n", 2, True),
        ("store", False, False),
        ("store", True, True),
        ("logprobs", False, False),
        ("modalities", ["text"], False),
        ("modalities", ["text", "audio"], True),
        ("service_tier", "default", False),
        ("service_tier", "flex", True),
        ("presence_penalty", 0, False),
        ("presence_penalty", 0.5, True),
        ("parallel_tool_calls", True, False),
        ("parallel_tool_calls", False, True),
        ("logit_bias", {}, False),
        ("seed", 0, True),
    ],
)
def test_neutral_values_ask_nothing(name: str, value: Any, expected: bool) -> None:
    assert asked(PARAMETERS[name], value) is expected


def model(name: str) -> ModelInfo:
    info = load_catalog().model(name)
    assert info is not None
    return info


@pytest.mark.parametrize(
    ("vendor", "fields", "param"),
    [
        ("anthropic", {"n": 2}, "n"),
        ("anthropic", {"seed": 1}, "seed"),
        ("anthropic", {"presence_penalty": 0.5}, "presence_penalty"),
        ("anthropic", {"temperature": 1.5}, "temperature"),
        ("anthropic", {"logprobs": True}, "logprobs"),
        ("anthropic", {"service_tier": "flex"}, "service_tier"),
        ("anthropic", {"prompt_cache_key": "k"}, "prompt_cache_key"),
        ("google", {"parallel_tool_calls": False}, "parallel_tool_calls"),
        ("google", {"n": 9}, "n"),
        ("google", {"logit_bias": {"1": 5}}, "logit_bias"),
        ("mistral", {"store": True}, "store"),
        ("cohere", {"n": 2}, "n"),
        ("cohere", {"frequency_penalty": -1.0}, "frequency_penalty"),
        ("cohere", {"top_p": 0.001}, "top_p"),
        ("anthropic", {"modalities": ("text", "audio")}, "modalities"),
        ("google", {"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ("openai", {"web_search_options": {}}, "web_search_options"),
    ],
)
def test_a_vendor_refuses_what_it_cannot_honour(
    vendor: str, fields: dict[str, Any], param: str
) -> None:
    found = refusal(vendor, ChatRequest(model="m", messages=HELLO, **fields), None)
    assert found is not None and found.param == param
    assert found.reason


@pytest.mark.parametrize(
    ("vendor", "fields"),
    [
        ("openai", {"n": 3, "logprobs": True, "top_logprobs": 2, "logit_bias": {"1": 5}}),
        ("openai", {"store": True, "metadata": {"a": "b"}, "service_tier": "flex"}),
        ("anthropic", {"temperature": 0.5, "stop": ["x"], "user": "u"}),
        ("anthropic", {"parallel_tool_calls": False, "service_tier": "default"}),
        ("google", {"n": 2, "seed": 1, "logprobs": True, "top_logprobs": 3}),
        ("google", {"service_tier": "flex", "store": True, "metadata": {"a": "b"}}),
        ("mistral", {"n": 2, "seed": 1, "prediction": {"type": "content", "content": "x"}}),
        ("mistral", {"logprobs": True, "metadata": {"a": "b"}, "prompt_cache_key": "k"}),
        ("cohere", {"seed": 1, "top_p": 1.0, "presence_penalty": 0.5}),
    ],
)
def test_a_vendor_takes_what_it_can_honour(vendor: str, fields: dict[str, Any]) -> None:
    assert refusal(vendor, ChatRequest(model="m", messages=HELLO, **fields), None) is None


def test_a_model_that_samples_its_own_way_refuses_a_temperature() -> None:
    """OpenAI's reasoning models take only the default sampling settings."""
    reasoning = model("o3")
    request = ChatRequest(model="o3", messages=HELLO, temperature=0.2)
    found = refusal("openai", request, reasoning)
    assert found is not None and found.param == "temperature"
    assert refusal("openai", ChatRequest(model="o3", messages=HELLO), reasoning) is None


def test_spoken_answers_need_an_audio_model() -> None:
    """`modalities: ["audio"]` and `audio` are OpenAI's audio models' (gpt-audio...)."""
    spoken = {"voice": "alloy", "format": "wav"}
    request = ChatRequest(model="x", messages=HELLO, modalities=("text", "audio"), audio=spoken)
    assert refusal("openai", request, model("gpt-audio")) is None
    found = refusal("openai", request, model("gpt-4o-mini"))
    assert found is not None and found.param == "modalities"
    assert "audio models" in found.reason
    # A model the catalog does not describe is left to its vendor.
    assert refusal("openai", request, None) is None


def test_reasoning_effort_needs_a_model_that_reasons() -> None:
    request = ChatRequest(model="x", messages=HELLO, reasoning_effort="low")
    assert refusal("openai", request, model("o3")) is None
    found = refusal("openai", request, model("gpt-4o-mini"))
    assert found is not None and found.param == "reasoning_effort"
    # A model the catalog does not describe is left to its vendor.
    assert refusal("openai", request, None) is None
