"""What a routing rule's `actions.transform` may say, and doing it to a chat request (pure).

The spec leaves the fields of `transform` open; these are ours, all optional, at least
one present:

- `system_prompt` (string): a system message the upstream receives first.
- `system_prompt_mode`: `prepend` (default) puts it before the conversation, whose own
  system and developer messages stay after it; `replace` drops those first, so the
  rule's instructions are the only ones. Needs `system_prompt`.
- `set` (object): request parameters forced on the request whatever the client sent:
  `temperature`, `top_p`, `presence_penalty`, `frequency_penalty` (the chat endpoint's
  bounds), `max_tokens` (>= 1), `stop` (a string or 1 to 4 strings), `seed` (integer).
- `max_tokens_cap` (integer >= 1): `max_tokens` is at most this; a request without one
  gets exactly this. Applied after `set`.

Strict parsing (`parse_transform`) guards what is stored: a rule with an unknown key or
a bad value is refused at creation. Rules stored before these fields existed may hold
anything, so compiling a stored transform (`compile_transform`) is lenient: it keeps
each valid field and reports the rest, which are then ignored rather than failing the
chat requests the rule matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from gateway.upstream.options import MAX_STOP, NUMBER_BOUNDS
from providers.types import ChatRequest

WHERE = "actions.transform"
MAX_SYSTEM_PROMPT = 32_768  # characters; a rule is policy, not a document store
PROMPT_MODES = ("prepend", "replace")
INSTRUCTION_ROLES = frozenset({"system", "developer"})  # what `replace` drops
SETTABLE = (*NUMBER_BOUNDS, "max_tokens", "stop", "seed")


class TransformError(ValueError):
    """A transform field the gateway will not store: which one, why, and its value."""

    def __init__(self, message: str, *, param: str, value: Any) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.value = value


@attrs.frozen
class Transform:
    """A validated transform, with `set` values already in the request's types."""

    system_prompt: str | None = None
    system_prompt_mode: str = "prepend"
    set: Mapping[str, Any] = attrs.field(factory=dict)
    max_tokens_cap: int | None = None

    @property
    def empty(self) -> bool:
        return self.system_prompt is None and not self.set and self.max_tokens_cap is None

    def to_json(self) -> dict[str, Any]:
        """The fields in force, as JSON (what a dry run shows of a matched rule)."""
        shown: dict[str, Any] = {}
        if self.system_prompt is not None:
            shown["system_prompt"] = self.system_prompt
            shown["system_prompt_mode"] = self.system_prompt_mode
        if self.set:
            shown["set"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.set.items()}
        if self.max_tokens_cap is not None:
            shown["max_tokens_cap"] = self.max_tokens_cap
        return shown


# -- parsing ---------------------------------------------------------------------------------


def parse_transform(value: Any) -> dict[str, Any]:
    """The JSON form to store for `actions.transform`; `TransformError` on any problem.

    What passes is stored as sent: no defaults are filled in, so a rule reads back as
    it was written. An empty object is a transform that changes nothing (the spec lists
    `transform` among the actions without showing its fields, so `{}` is what a client
    that knows only the spec sends).
    """
    if not isinstance(value, dict):
        raise TransformError(f"'{WHERE}' must be an object.", param=WHERE, value=value)
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise TransformError(
            f"Unknown key '{unknown[0]}' in '{WHERE}'; known: {', '.join(FIELDS)}.",
            param=f"{WHERE}.{unknown[0]}",
            value=value[unknown[0]],
        )
    if "system_prompt_mode" in value and "system_prompt" not in value:
        raise TransformError(
            f"'{WHERE}.system_prompt_mode' needs a 'system_prompt'.",
            param=f"{WHERE}.system_prompt_mode",
            value=value["system_prompt_mode"],
        )
    for name, item in value.items():
        FIELDS[name](item)
    return dict(value)


def compile_transform(data: Mapping[str, Any]) -> tuple[Transform | None, tuple[str, ...]]:
    """The typed transform of a stored one, and the keys it ignores (unknown or invalid).

    None when nothing usable is left.
    """
    typed: dict[str, Any] = {}
    ignored: list[str] = []
    for name, item in data.items():
        parse = FIELDS.get(name)
        try:
            if parse is None:
                raise TransformError("unknown", param=name, value=item)
            typed[name] = parse(item)
        except TransformError:
            ignored.append(name)
    transform = Transform(**typed)
    return (None if transform.empty else transform), tuple(ignored)


def _system_prompt(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SYSTEM_PROMPT:
        raise TransformError(
            f"'{WHERE}.system_prompt' must be a non-empty string of at most "
            f"{MAX_SYSTEM_PROMPT} characters.",
            param=f"{WHERE}.system_prompt",
            value=value,
        )
    return value


def _prompt_mode(value: Any) -> str:
    if value not in PROMPT_MODES:
        raise TransformError(
            f"'{WHERE}.system_prompt_mode' must be one of {', '.join(PROMPT_MODES)}.",
            param=f"{WHERE}.system_prompt_mode",
            value=value,
        )
    return str(value)


def _max_tokens_cap(value: Any) -> int:
    return _positive_int(value, f"{WHERE}.max_tokens_cap")


def _settings(value: Any) -> dict[str, Any]:
    """The forced parameters, typed as `ChatRequest` holds them."""
    where = f"{WHERE}.set"
    if not isinstance(value, dict) or not value:
        raise TransformError(
            f"'{where}' must be a non-empty object of: {', '.join(SETTABLE)}.",
            param=where,
            value=value,
        )
    unknown = sorted(set(value) - set(SETTABLE))
    if unknown:
        raise TransformError(
            f"'{where}' cannot set '{unknown[0]}'; it can set: {', '.join(SETTABLE)}.",
            param=f"{where}.{unknown[0]}",
            value=value[unknown[0]],
        )
    return {name: _setting(name, item, f"{where}.{name}") for name, item in value.items()}


def _setting(name: str, value: Any, where: str) -> Any:
    if name in NUMBER_BOUNDS:
        return _bounded_number(value, where, *NUMBER_BOUNDS[name])
    if name == "max_tokens":
        return _positive_int(value, where)
    if name == "stop":
        return _stop(value, where)
    if isinstance(value, bool) or not isinstance(value, int):  # seed
        raise TransformError(f"'{where}' must be an integer.", param=where, value=value)
    return value


def _bounded_number(value: Any, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise TransformError(
            f"'{where}' must be a number between {low:g} and {high:g}.", param=where, value=value
        )
    return float(value)


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TransformError(
            f"'{where}' must be an integer of at least 1.", param=where, value=value
        )
    return value


def _stop(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        return (value,)
    if (
        isinstance(value, list)
        and 1 <= len(value) <= MAX_STOP
        and all(isinstance(item, str) and item for item in value)
    ):
        return tuple(value)
    raise TransformError(
        f"'{where}' must be a non-empty string or an array of 1 to {MAX_STOP} of them.",
        param=where,
        value=value,
    )


FIELDS: Mapping[str, Callable[[Any], Any]] = {
    "system_prompt": _system_prompt,
    "system_prompt_mode": _prompt_mode,
    "set": _settings,
    "max_tokens_cap": _max_tokens_cap,
}


# -- applying --------------------------------------------------------------------------------


def apply_transform(transform: Transform, request: ChatRequest) -> ChatRequest:
    """`request` as the upstream should receive it once `transform` is done to it."""
    changes = dict(transform.set)
    if transform.system_prompt is not None:
        changes["messages"] = with_system_prompt(
            request.messages, transform.system_prompt, transform.system_prompt_mode
        )
    cap = transform.max_tokens_cap
    if cap is not None:
        asked = changes.get("max_tokens", request.max_tokens)
        changes["max_tokens"] = cap if asked is None else min(asked, cap)
    return attrs.evolve(request, **changes)


def with_system_prompt(
    messages: Sequence[Mapping[str, Any]], text: str, mode: str
) -> tuple[Mapping[str, Any], ...]:
    """The rule's system message first; with `replace`, the client's own instructions
    (system and developer messages) are dropped so they cannot contradict it."""
    kept = (
        [m for m in messages if m.get("role") not in INSTRUCTION_ROLES]
        if mode == "replace"
        else list(messages)
    )
    return ({"role": "system", "content": text}, *kept)


def request_changes(before: ChatRequest, after: ChatRequest) -> dict[str, Any]:
    """What a transform changed, for the rule-test dry run: each forced parameter with its
    new value, and `system_messages` (the instructions the upstream will read) when the
    messages changed."""
    changed: dict[str, Any] = {}
    for name in SETTABLE:
        value = getattr(after, name)
        if value != getattr(before, name):
            changed[name] = list(value) if isinstance(value, tuple) else value
    if after.messages != before.messages:
        changed["system_messages"] = [
            m.get("content") for m in after.messages if m.get("role") in INSTRUCTION_ROLES
        ]
    return changed
