"""`gateway.chat.truncation`: whole turns go, oldest first; a tool call never loses its
result; the instructions and the last turn stay."""

from __future__ import annotations

from typing import Any

import attrs

from gateway.chat.model_fit import prompt_tokens
from gateway.chat.truncation import truncated
from providers.catalog import load_catalog
from providers.types import ChatRequest

CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def request(messages: list[dict[str, Any]]) -> ChatRequest:
    return ChatRequest(model="m", messages=messages)


def window(tokens: int) -> Any:
    info = load_catalog().model("gpt-4o-mini")
    assert info is not None
    return attrs.evolve(info, context_window=tokens)


def test_a_tool_call_goes_with_its_result_and_the_instructions_stay() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "rules"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x" * 400},
        {"role": "user", "content": "last question"},
    ]
    limit = prompt_tokens([messages[0], messages[3]], None)
    fitted = truncated(request(messages), 1, window(limit))
    assert [m["role"] for m in fitted.messages] == ["system", "user"]


def test_a_request_that_fits_is_the_same_object() -> None:
    asked = request([{"role": "user", "content": "hi"}])
    assert truncated(asked, 0, window(1_000)) is asked


def test_the_last_turn_stays_even_when_it_does_not_fit() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "a" * 400},
        {"role": "user", "content": "b" * 400},
    ]
    assert [m["content"][0] for m in truncated(request(messages), 0, window(10)).messages] == ["b"]
