"""`streams.text_deltas.TextShape`: a plain text delta's text read without a parse, and
only where the full parse would read the same text (every JSON: escapes, nesting,
duplicate keys, member order)."""

from __future__ import annotations

import random
from typing import Any

import orjson

from providers.openai import plain_text
from streams.text_deltas import TextShape

HEAD = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m",'


def event(text: str, *, finish: str | None = None, extra: str = "") -> str:
    """An OpenAI-style chunk, its text written as a JSON encoder writes it."""
    delta = orjson.dumps({"content": text}).decode()
    reason = orjson.dumps(finish).decode()
    choice = f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{reason}}}'
    return f'{HEAD}"choices":[{choice}],"usage":null{extra}}}'


def learned(data: str) -> TextShape:
    shape = TextShape()
    text = plain_text(orjson.loads(data))
    assert text is not None
    shape.learn(data, text)
    return shape


def test_the_same_shape_is_read_without_a_parse() -> None:
    shape = learned(event("Hello"))
    assert shape.text(event(" world")) == " world"
    assert shape.text(event("été ✓ 😀")) == "été ✓ 😀"
    assert shape.text(event('{"}')) is None  # escaped quote: left to the parse


def test_escapes_and_control_characters_are_left_to_the_parse() -> None:
    shape = learned(event("Hello"))
    for text in ['say "hi"', "a\\b", "line\nbreak", "tab\t", "\x01"]:
        assert shape.text(event(text)) is None
    assert shape.text(event("Hello").replace("Hello", "\\u00e9")) is None


def test_another_shape_is_left_to_the_parse() -> None:
    shape = learned(event("Hello"))
    assert shape.text(event("Hello", finish="stop")) is None
    assert shape.text(event("Hello", extra=',"obfuscation":"x"')) is None
    assert shape.text(event("x").replace('"usage":null', '"usage":{"total_tokens":1}')) is None
    assert shape.text('{"error":{"message":"boom"}}') is None
    assert shape.text("") is None and shape.text("[DONE]") is None


def test_nothing_is_learned_from_an_ambiguous_event() -> None:
    # the text is also the model's name: which string did the parse take?
    shape = learned(event("m"))
    assert shape.text(event("other")) is None
    # an escape anywhere: the text's own string may be written otherwise (`\u0048i`),
    # and the one string spelled "Hi" then is another (the model's)
    escaped = event("Hi").replace('"content":"Hi"', '"content":"\\u0048i"')
    escaped = escaped.replace('"model":"m"', '"model":"Hi"')
    shape = learned(escaped)
    later = escaped.replace('"model":"Hi"', '"model":"other"')
    assert shape.text(later) in (None, plain_text(orjson.loads(later)))
    shape = learned(event("Hi").replace('"model":"m"', '"model":"Hi"'))
    assert shape.text(event("other")) is None
    assert TextShape().text(event("Hi")) is None  # nothing learned yet


def test_a_shape_learned_again_replaces_the_first() -> None:
    shape = learned(event("Hello"))
    other = event("Hi", extra=',"system_fingerprint":"fp"')
    shape.learn(other, "Hi")
    assert shape.text(event("yo", extra=',"system_fingerprint":"fp"')) == "yo"
    assert shape.text(event("yo")) is None


def test_duplicate_keys_read_as_the_parse_reads_them() -> None:
    doubled = '{"choices":[{"index":0,"delta":{"content":"a","content":"%s"}}]}'
    shape = learned(doubled % "bb")
    later = doubled % "zz"
    assert shape.text(later) == plain_text(orjson.loads(later)) == "zz"


PIECES = ["a", "b c", 'q"x', "e\\s", "m", "", "\u00e9", "\n", "content", "{", "}", ","]


def _random_event(rng: random.Random, model: str) -> str:
    """A chat chunk of a random shape: nested objects holding `content` keys, members in
    any order, strings that need escapes, finishes and usage now and then."""
    delta: dict[str, Any] = {"content": rng.choice(PIECES) + rng.choice(PIECES)}
    if rng.random() < 0.2:
        delta["role"] = "assistant"
    if rng.random() < 0.1:
        delta["tool_calls"] = [{"index": 0, "function": {"arguments": rng.choice(PIECES)}}]
    choice: dict[str, Any] = {
        "index": 0 if rng.random() < 0.9 else 1,
        "delta": delta,
        "finish_reason": None if rng.random() < 0.85 else "stop",
    }
    data: dict[str, Any] = {"id": "c", "model": model, "choices": [choice]}
    if rng.random() < 0.05:
        data["meta"] = {"content": rng.choice(PIECES), "delta": {"content": "x"}}
    if rng.random() < 0.05:
        data["usage"] = {"total_tokens": 3}
    items = list(data.items())
    if rng.random() < 0.05:
        rng.shuffle(items)
    return orjson.dumps(dict(items)).decode()


def test_it_agrees_with_the_full_parse_on_every_event() -> None:
    rng, read = random.Random(37), 0
    for _ in range(200):
        shape, model = TextShape(), rng.choice(PIECES)
        for _ in range(30):
            data = _random_event(rng, model)
            expected = plain_text(orjson.loads(data))
            found = shape.text(data)
            assert found is None or found == expected, data
            read += found is not None
            if found is None and expected is not None:
                shape.learn(data, expected)
    assert read > 500  # the shape was read often, not only left to the parse
