"""What a declared field says beyond its Python type.

A request or answer shape is a Python type: an attrs class (what a request carries, the
input types of a family's `input.py`) or a `TypedDict` (what an answer holds, built by a
family's `render.py`). Its fields' annotations may be `Annotated[T, marker, ...]` with the
markers below; from that one declaration come both the JSON Schema the OpenAPI document
states (`gateway.platform.shapes.schema`) and the checks the server makes on what it
reads (`gateway.platform.shapes.parse`), so the two cannot say different things.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

T = TypeVar("T")


@attrs.frozen
class Doc:
    """What the field means, for people (the schema's `description`)."""

    text: str


@attrs.frozen(eq=False)
class Example:
    """A value the document shows (the schema's `examples`)."""

    value: Any


@attrs.frozen
class Length:
    """A string's length in characters."""

    least: int | None = None
    most: int | None = None


@attrs.frozen(eq=False)
class Range:
    """A number's bounds: `least`/`most` inclusive, `above`/`below` exclusive.

    Compared by identity: `Range(0, 1)` and `Range(0.0, 1.0)` would be equal, and
    typing's cache of `Annotated[float, ...]` then hands out whichever was declared
    first for both, so the document said `0 to 1` or `0.0 to 1.0` by import order."""

    least: float | None = None
    most: float | None = None
    above: float | None = None
    below: float | None = None


@attrs.frozen
class Choices:
    """The only values the field takes (the schema's `enum`)."""

    values: tuple[Any, ...]


@attrs.frozen
class Pattern:
    """A string that matches `regex` (searched, as JSON Schema does), said to a client
    who got it wrong as `meaning` ("a non-empty string")."""

    regex: str
    meaning: str = ""

    def matches(self, text: str) -> bool:
        return re.search(self.regex, text) is not None


@attrs.frozen
class Format:
    """A string in a named format: `date-time` (ISO 8601 with a zone or `Z`), `date`
    (YYYY-MM-DD). Both are checked when read."""

    name: str


@attrs.frozen
class Count:
    """How many items an array (or entries an object map) holds, and whether an array's
    items must differ."""

    least: int | None = None
    most: int | None = None
    unique: bool = False


@attrs.frozen
class Key:
    """The JSON key of a field whose name is not a Python identifier (`from`)."""

    name: str


@attrs.frozen
class NotNull:
    """On `X | None`: the Python value is None when the field is left out, but a JSON
    `null` is refused (a field that may be omitted, not emptied)."""


# White space as both regex dialects see it: JSON Schema's (ECMA-262) `\s` and Python's
# differ (Python counts \x1c-\x1f and \x85; ECMA counts \ufeff), so patterns name the
# characters instead of using `\s`, and the document and the server read them alike.
SPACE = (
    "\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029"
    "\\u202f\\u205f\\u3000\\ufeff"
)
NON_BLANK = Pattern(f"[^{SPACE}]", "a non-empty string")
EMAIL = Pattern(f"^[^@{SPACE}]+@[^@{SPACE}]+\\.[^@{SPACE}]+$", "an email address")
NOT_NULL = NotNull()

# A class-level mark (`@accepts_more`): an attrs request shape that ignores fields it does
# not know instead of refusing them (the default refuses: a misspelt option is a 400).
OPEN = "__shape_open__"


# A class-level mark (`@needs_fields(n)`): the body must hold at least n of the fields.
NEEDED = "__shape_fields_needed__"


def needs_fields(least: int) -> Callable[[type[T]], type[T]]:
    """Mark a request shape whose body must hold at least `least` of its fields (the
    schema's `minProperties`): a change that names nothing to change is refused."""

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, NEEDED, least)
        return cls

    return mark


# A class-level mark (`@together(rule, ...)`): JSON Schema rules over several fields.
RULES = "__shape_rules__"


def together(*rules: dict[str, Any]) -> Callable[[type[T]], type[T]]:
    """Mark a request shape with what its fields mean together (one bound of two
    spellings, a field that needs another), as JSON Schema rules (the schema's `allOf`).
    Field types cannot say it; the family's parser checks the same rules by hand, and
    the schemathesis run holds the two to each other."""

    def mark(cls: type[T]) -> type[T]:
        setattr(cls, RULES, list(rules))
        return cls

    return mark


def accepts_more(cls: type[T]) -> type[T]:
    """Mark a request shape as open: unknown fields are ignored, and the document does
    not say `additionalProperties: false`."""
    setattr(cls, OPEN, True)
    return cls
