"""Deterministic content for every simulated vendor: replies, token counts, tool calls,
embeddings, and the pacing of streamed tokens.

Everything except `pace` is a pure function of plain text and JSON-schema dicts, so that
each vendor module only translates its wire format and the same question gets the same
answer (and the same usage) from every vendor. Determinism comes from hashing the input
(SHAKE-256, which gives as many bytes as needed), never from a random generator.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import operator
import re
import sys
from array import array
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from typing import Any

import attrs
import trio

from providers.sim.core import Fault, StreamCut
from providers.types import ToolCall

VOCABULARY = (
    "the", "model", "answer", "gateway", "stream", "token", "simple", "quick", "river",
    "stone", "light", "cloud", "green", "energy", "signal", "value", "route", "carbon",
    "window", "garden", "number", "system", "record", "moment", "travel", "bright",
    "silver", "market", "winter", "summer", "object", "letter", "circle", "engine",
    "planet", "forest", "bridge", "harbor", "orange", "yellow", "gentle", "steady",
    "rapid", "quiet", "north", "south", "early", "later", "paper", "metal", "water",
    "fire", "field", "house", "table", "music", "story", "voice", "coffee", "island",
    "mountain", "valley", "ocean", "sky",
)  # fmt: skip
_SPACED = tuple(" " + word for word in VOCABULARY)
_CAPITAL = tuple(word.capitalize() for word in VOCABULARY)
CHARS_PER_TOKEN = 4
SENTENCE_WORDS = 12
_NO_FAULT = Fault(model="*")


def _stream(text: str, size: int) -> bytes:
    """`size` pseudo-random bytes determined by `text`."""
    return hashlib.shake_256(text.encode()).digest(size)


def received(notes: Sequence[str]) -> list[str]:
    """The opening of an answer to a request with documents or audio, naming each as the
    vendor got it (`document report.pdf`, `audio wav`), so that a test sees what arrived
    in which shape; nothing when there are none. Its last token ends in a space: the
    answer's own first token follows it."""
    if not notes:
        return []
    words = f"[received {len(notes)}: {'; '.join(notes)}] ".split(" ")
    return [words[0], *(" " + word for word in words[1:-1] if word), " "]


def reply_tokens(prompt: str, count: int) -> list[str]:
    """`count` tokens of plausible prose chosen by the hash of `prompt`.

    Tokens after the first carry their leading space, as BPE tokens do, so that joining
    them gives the text; a sentence ends every `SENTENCE_WORDS` words and at the end.
    """
    if count <= 0:
        return []
    picks = [byte % len(VOCABULARY) for byte in _stream(prompt, count)]
    tokens = [_SPACED[pick] for pick in picks]
    for start in range(0, count, SENTENCE_WORDS):
        tokens[start] = (" " if start else "") + _CAPITAL[picks[start]]
        end = min(start + SENTENCE_WORDS, count) - 1
        tokens[end] += "."
    return tokens


def scripted_tokens(text: str, count: int) -> list[str]:
    """A scripted reply as tokens (a word each, leading space kept), at most `count` of
    them, as a model that stops at `max_tokens` would."""
    return re.findall(r"\s*\S+", text)[: max(0, count)]


def stop_sequences(value: Any) -> tuple[str, ...]:
    """A request's stop sequences: one string or an array of them (anything else, none)."""
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list):
        return tuple(stop for stop in value if isinstance(stop, str) and stop)
    return ()


def cut_at_stop(tokens: list[str], stops: Sequence[str]) -> tuple[list[str], str | None]:
    """The tokens up to (not including) the earliest stop sequence, and which one matched."""
    text = "".join(tokens)
    found = [(text.find(stop), stop) for stop in stops if stop and stop in text]
    if not found:
        return tokens, None
    at, stop = min(found)
    kept: list[str] = []
    length = 0
    for token in tokens:
        if length + len(token) > at:
            kept.append(token[: at - length])
            break
        kept.append(token)
        length += len(token)
    return [token for token in kept if token], stop


def count_tokens(text: str) -> int:
    """A rough token count (~4 characters a token, at least 1), as used for usage."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


@attrs.frozen(slots=True)
class ChoicePlan:
    """One of the `n` answers of a chat request: text tokens or one tool call, and the
    tokens' log-probabilities when they were asked for."""

    index: int
    tokens: list[str]
    tool_call: ToolCall | None
    finish_reason: str
    logprobs: list[dict[str, Any]] | None = None

    @property
    def completion_tokens(self) -> int:
        if self.tool_call is not None:
            return count_tokens(self.tool_call.name + self.tool_call.arguments)
        return len(self.tokens)


@attrs.frozen(slots=True)
class ChatPlan:
    """A chat answer of the chat-completions simulators (OpenAI, Mistral), decided before
    any of it is sent: the first choice's text tokens or tool call (and log-probabilities),
    and the other choices when `n` > 1."""

    id: str
    model: str
    created: int
    prompt_tokens: int
    tokens: list[str]
    tool_call: ToolCall | None
    finish_reason: str
    logprobs: list[dict[str, Any]] | None = None
    more_choices: tuple[ChoicePlan, ...] = ()

    @property
    def choices(self) -> tuple[ChoicePlan, ...]:
        first = ChoicePlan(0, self.tokens, self.tool_call, self.finish_reason, self.logprobs)
        return (first, *self.more_choices)

    @property
    def plain(self) -> bool:
        """One text answer without log-probabilities (the common case, sent from a template)."""
        return not self.more_choices and self.logprobs is None and self.tool_call is None

    @property
    def completion_tokens(self) -> int:
        return sum(choice.completion_tokens for choice in self.choices)


def choice_prompt(prompt: str, index: int) -> str:
    """What choice `index` of `n` answers: the prompt itself for the first, a variant for
    the others, so that `n` answers differ as a sampling model's would."""
    return prompt if index == 0 else f"{prompt}\n#choice {index}"


def token_logprobs(tokens: Sequence[str], top: int) -> list[dict[str, Any]]:
    """Deterministic log-probabilities of `tokens` in the chat-completions shape, each
    with `top` alternatives (the token itself first, then other words, less likely)."""
    entries = []
    for position, token in enumerate(tokens):
        drop = _stream(f"{position}:{token}", 1)[0] / 255
        logprob = round(-0.05 - drop, 6)
        alternatives = [(token, logprob)] + [
            (_SPACED[(position + k) % len(_SPACED)], round(logprob - k, 6)) for k in range(1, top)
        ]
        entries.append(
            {
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": p, "bytes": list(t.encode())}
                    for t, p in alternatives[:top]
                ],
            }
        )
    return entries


def count_prompt_tokens(messages: Iterable[str]) -> int:
    """Prompt tokens of a conversation given as one text per message."""
    return sum(count_tokens(text) for text in messages)


# --- tool calls --------------------------------------------------------------------


def wants_tool_call(
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
    last_role: str | None,
) -> bool:
    """Whether the simulated model calls a tool rather than answering in text.

    A forced choice (`required`, or a named function) always calls; `none` never does;
    otherwise (`auto` or absent) the model calls a tool after a user turn and answers in
    text after a tool result, so that agent loops terminate.
    """
    if not tools or tool_choice == "none":
        return False
    if tool_choice == "required" or isinstance(tool_choice, Mapping):
        return True
    return last_role == "user"


def pick_tool(
    tools: Sequence[Mapping[str, Any]],
    tool_choice: str | Mapping[str, Any] | None,
    prompt: str,
) -> Mapping[str, Any] | None:
    """The function (`{name, description?, parameters?}`) the model calls.

    A named choice picks that function (None if no tool has that name); otherwise the
    first function whose name appears in the prompt, else the first function.
    """
    functions = [tool.get("function", tool) for tool in tools]
    if isinstance(tool_choice, Mapping):
        wanted = tool_choice.get("function", tool_choice).get("name")
        return next((fn for fn in functions if fn.get("name") == wanted), None)
    lowered = prompt.lower()
    named = (fn for fn in functions if str(fn.get("name", "")).lower() in lowered)
    return next(named, functions[0] if functions else None)


def plan_tool_call(function: Mapping[str, Any], prompt: str) -> ToolCall:
    """A complete call of `function` with arguments that satisfy its JSON schema."""
    name = str(function.get("name", ""))
    seed = f"{name}\x00{prompt}"
    arguments = arguments_for(function.get("parameters") or {}, seed)
    return ToolCall(
        id=tool_call_id(seed),
        name=name,
        arguments=json.dumps(arguments, separators=(",", ":")),
    )


def tool_call_id(seed: str) -> str:
    """An OpenAI-style call id (`call_` and 24 hex digits), stable for a given seed."""
    return "call_" + _stream("id\x00" + seed, 12).hex()


# What a JSON mode without a schema answers (OpenAI's and Mistral's `json_object`,
# Gemini's `responseMimeType` alone, Cohere's `json_object`): an object, as the vendors'
# models give, so a client that parses the content gets JSON.
JSON_OBJECT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def response_format_schema(value: Any) -> Mapping[str, Any] | None:
    """The schema the answer must satisfy under a chat-completions `response_format`
    (OpenAI, Mistral): `json_schema`'s own schema, any object for `json_object`, None
    (prose) otherwise."""
    if not isinstance(value, dict):
        return None
    if value.get("type") == "json_object":
        return JSON_OBJECT_SCHEMA
    if value.get("type") != "json_schema":
        return None
    schema = (value.get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, dict) else JSON_OBJECT_SCHEMA


def arguments_for(schema: Mapping[str, Any], seed: str) -> Any:
    """A plausible value of the type `schema` describes.

    Objects get each required property (every property when none is listed as
    required); strings a word, numbers 42, booleans true, arrays [], enums their first
    value, `anyOf`/`oneOf` their first option.
    """
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if schema.get(combinator):
            return arguments_for(schema[combinator][0], seed)
    kind = _schema_type(schema)
    if kind == "object":
        return _object_for(schema, seed)
    return _scalar_for(kind, seed)


def _schema_type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        return "object" if "properties" in schema else "string"
    return str(kind)


def _object_for(schema: Mapping[str, Any], seed: str) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = schema.get("required")
    names = [name for name in properties if name in required] if required else list(properties)
    return {name: arguments_for(properties[name], f"{seed}.{name}") for name in names}


def _scalar_for(kind: str, seed: str) -> Any:
    if kind in ("number", "integer"):
        return 42
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "null":
        return None
    return VOCABULARY[_stream(seed, 1)[0] % len(VOCABULARY)]


def fragments(text: str, size: int = 8) -> list[str]:
    """`text` cut into pieces of `size` characters, as streamed tool arguments arrive."""
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


# --- embeddings --------------------------------------------------------------------


def embedding(text: str, size: int, dimensions: int | None = None) -> list[float]:
    """A unit vector of `size` components determined by `text`, where texts sharing words
    point in similar directions, as real embeddings do (so retrieval can be tested).

    A hashing bag of words: each lowercased word adds +1 or -1 (by its hash) to one
    component (by its hash), and a small text-determined noise keeps every component
    non-zero and different texts apart. With `dimensions`, the vector is cut to that many
    components and normalized again, which is how shortened third-generation OpenAI
    embeddings behave.
    """
    noise = array("H", _stream("embedding\x00" + text, 2 * size))  # little-endian uint16
    if sys.byteorder == "big":
        noise.byteswap()
    centred = list(map(operator.sub, noise, itertools.repeat(32767.5)))
    words: dict[int, float] = {}
    for word in _WORDS.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % size
        words[slot] = words.get(slot, 0.0) + (1.0 if digest[4] & 1 else -1.0)
    # words / |words| + 0.15 * noise / |noise|, the words being few (a sparse sum)
    vector = _scaled(centred, 0.15 / (math.hypot(*centred) or 1.0))
    words_norm = math.hypot(*words.values()) or 1.0
    for slot, count in words.items():
        vector[slot] += count / words_norm
    if dimensions is not None:
        vector = vector[:dimensions]
    return _scaled(vector, 1 / (math.hypot(*vector) or 1.0))


def _scaled(values: list[float], factor: float) -> list[float]:
    return list(map(operator.mul, values, itertools.repeat(factor)))


_WORDS = re.compile(r"\w+")


# --- pacing ------------------------------------------------------------------------


async def pace(
    tokens: list[str],
    ttft_ms: float,
    tokens_per_second: float,
    fault: Fault | None = None,
) -> AsyncGenerator[list[str], None]:
    """Yield `tokens` in groups at the pace of a real model.

    The first group comes after `ttft_ms`; token *i* is due `i / tokens_per_second`
    seconds later, and each group holds every token already due (one token per group
    when there is no pacing). A fault with `stop_after_chunks` stalls `stall_ms` after
    that many groups, or, without a stall, raises `StreamCut` there. Cancellation
    interrupts the waits; nothing is left running.
    """
    fault = fault or _NO_FAULT
    start = trio.current_time() + ttft_ms / 1000
    interval = 1 / tokens_per_second if tokens_per_second > 0 else 0.0
    if ttft_ms > 0:
        await trio.sleep_until(start)
    sent = 0
    groups = 0
    interrupted = False
    while sent < len(tokens):
        if groups == fault.stop_after_chunks and not interrupted:
            interrupted = True
            start += await _interrupt(fault)
        due = _due_count(sent, start, interval, len(tokens))
        if due == sent:
            await trio.sleep_until(start + sent * interval)
            continue
        yield tokens[sent:due]
        sent = due
        groups += 1


def _due_count(sent: int, start: float, interval: float, total: int) -> int:
    """How many tokens are due by now (at least one more when not paced)."""
    if interval == 0:
        return sent + 1
    elapsed = trio.current_time() - start
    # The epsilon keeps float error from making a token due just after its deadline.
    return min(total, max(sent, math.floor(elapsed / interval + 1e-9) + 1))


async def _interrupt(fault: Fault) -> float:
    """Stall (returning how long, so the pace shifts by as much) or cut the stream."""
    if fault.stall_ms:
        await trio.sleep(fault.stall_ms / 1000)
        return fault.stall_ms / 1000
    raise StreamCut(f"stream cut after {fault.stop_after_chunks} chunks")
