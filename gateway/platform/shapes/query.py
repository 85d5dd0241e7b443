"""Query strings read into a declared attrs class, and the parameters the document lists
for it: one declaration for both, as for request bodies.

Each field is one parameter. Text becomes the field's type first (`7` an integer,
`true`/`false` a boolean; an array is the parameter repeated), then the same checks as a
body's field apply (`gateway.platform.shapes.parse.read`), with the same 400s.
Parameters the class does not declare are ignored, as HTTP clients expect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from gateway.platform.errors import invalid_request
from gateway.platform.shapes.markers import Doc
from gateway.platform.shapes.nodes import Field, Kind, Node, fields_of
from gateway.platform.shapes.parse import read
from gateway.platform.shapes.schema import Components, Schema, node_schema

T = TypeVar("T")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # ASCII: `\d` takes other scripts' digits


class Args(Protocol):
    """A query string's values (Werkzeug's `MultiDict`, or a plain mapping)."""

    def get(self, key: str, /) -> str | None: ...


def parse_query(cls: type[T], args: Args | Mapping[str, str]) -> T:
    """The query string as a `cls`; a 400 naming the first wrong parameter."""
    found: dict[str, Any] = {}
    for field in fields_of(cls):
        texts = _texts(args, field)
        if not texts:
            if field.required:
                raise invalid_request(f"'{field.key}' is required.", param=field.key)
            continue
        found[field.attr] = read(field.node, _typed(field.node, texts), field.key)
    return cls(**found)


def _texts(args: Args | Mapping[str, str], field: Field) -> list[str]:
    if field.node.kind is Kind.ARRAY and hasattr(args, "getlist"):
        return list(args.getlist(field.key))
    value = args.get(field.key)
    return [] if value is None else [value]


def _typed(node: Node, texts: list[str]) -> Any:
    if node.kind is Kind.ARRAY:
        assert node.item is not None
        return [_converted(node.item, text) for text in texts]
    return _converted(node, texts[-1])


def _converted(node: Node, text: str) -> Any:
    """`text` as the JSON value it stands for in `node`'s type; left as text when it
    stands for none (the check that follows then names the parameter)."""
    if node.kind is Kind.UNION:
        for option in node.options:
            value = _converted(option, text)
            if value is not text:
                return value
        return text
    if node.kind is Kind.LITERAL:
        for value in node.values:
            if not isinstance(value, str) and text == _text_of(value):
                return value
        return text
    return _CONVERTERS.get(node.kind, _as_text)(text)


def _text_of(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_text(text: str) -> Any:
    return text


def _integer(text: str) -> Any:
    return int(text) if _INTEGER.match(text) else text


def _number(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def _boolean(text: str) -> Any:
    return {"true": True, "false": False}.get(text, text)


_CONVERTERS = {Kind.INTEGER: _integer, Kind.NUMBER: _number, Kind.BOOLEAN: _boolean}


def query_parameters(cls: type, components: Components) -> list[Schema]:
    """The OpenAPI `parameters` (in: query) of a query shape."""
    return [_parameter(field, components) for field in fields_of(cls)]


def _parameter(field: Field, components: Components) -> Schema:
    schema = node_schema(field.node, components)
    description = schema.pop("description", None)
    if field.default is not None and not field.required and _plain(field.default):
        schema["default"] = field.default
    parameter: Schema = {
        "name": field.key,
        "in": "query",
        "required": field.required,
        "schema": schema,
    }
    doc = field.node.marker(Doc)
    if description or doc is not None:
        parameter["description"] = description or doc.text
    return parameter


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)
