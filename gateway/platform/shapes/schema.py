"""The JSON Schema (OpenAPI 3.1's dialect) of a declared type.

Named shapes (attrs classes, TypedDicts) become components referenced by `$ref`, so a
shape used by several operations is written once; the class docstring is its
description. Two different classes with one name are refused: a document whose `$ref`
could mean either would be wrong.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_origin

from gateway.platform.shapes.markers import (
    RULES,
    Choices,
    Count,
    Doc,
    Example,
    Format,
    Length,
    Pattern,
)
from gateway.platform.shapes.markers import Range as Bounds
from gateway.platform.shapes.nodes import (
    Field,
    Kind,
    Node,
    fields_needed,
    fields_of,
    is_open,
    node_of,
    shape_name,
)

Schema = dict[str, Any]
REF = "#/components/schemas/"


class Components:
    """The named shapes met while writing schemas, ready for `components.schemas`."""

    def __init__(self) -> None:
        self.schemas: dict[str, Schema] = {}
        self._classes: dict[str, type] = {}

    def ref(self, cls: type) -> Schema:
        name = shape_name(cls)
        known = self._classes.get(name)
        if known is not None and known != cls:
            raise ValueError(
                f"two shapes named {name!r}: {known.__module__} and {cls.__module__}; "
                "rename one (or give it a `__shape_name__`)"
            )
        if known is None:
            self._classes[name] = cls
            self.schemas[name] = {}  # a placeholder: a shape may refer to itself
            self.schemas[name] = object_schema(cls, self)
        return {"$ref": REF + name}

    def sorted(self) -> dict[str, Schema]:
        return dict(sorted(self.schemas.items()))


def schema_of(tp: Any, components: Components) -> Schema:
    """The schema of a declared type; named shapes go into `components`."""
    return node_schema(node_of(tp), components)


def object_schema(cls: type, components: Components) -> Schema:
    """A named shape's own schema: its properties, which are required, and whether more
    may appear."""
    fields = fields_of(cls)
    schema: Schema = {"type": "object"}
    description = _docstring(cls)
    if description:
        schema["description"] = description
    schema["properties"] = {f.key: _field_schema(f, components) for f in fields}
    required = [f.key for f in fields if f.required]
    if required:
        schema["required"] = required
    if not is_open(cls):
        schema["additionalProperties"] = False
    least = fields_needed(cls)
    if least:
        schema["minProperties"] = least
    rules = getattr(cls, RULES, None)
    if rules:
        schema["allOf"] = rules
    return schema


def _field_schema(field: Field, components: Components) -> Schema:
    schema = node_schema(field.node, components)
    if field.default is not None and _plain(field.default):
        schema = _with(schema, {"default": _json(field.default)})
    return schema


def node_schema(node: Node, components: Components) -> Schema:
    schema = _WRITERS[node.kind](node, components)
    extra: Schema = {}
    doc = node.marker(Doc)
    if doc is not None:
        extra["description"] = doc.text
    examples = [m.value for m in node.markers if isinstance(m, Example)]
    if examples:
        extra["examples"] = examples
    return _with(schema, extra) if extra else schema


def _with(schema: Schema, extra: Schema) -> Schema:
    """`schema` with `extra` keywords: beside a `$ref` they need an `allOf` wrapper only
    in older dialects; OpenAPI 3.1 allows siblings of `$ref`."""
    return schema | extra


def _string(node: Node, _: Components) -> Schema:
    schema: Schema = {"type": "string"}
    length = node.marker(Length)
    if length is not None:
        schema |= _drop_none(minLength=length.least, maxLength=length.most)
    pattern = node.marker(Pattern)
    if pattern is not None:
        schema["pattern"] = pattern.regex
    fmt = node.marker(Format)
    if fmt is not None:
        schema["format"] = fmt.name
    return schema | _choices(node)


def _number(node: Node, _: Components) -> Schema:
    schema: Schema = {"type": node.kind.value}
    bounds = node.marker(Bounds)
    if bounds is not None:
        schema |= _drop_none(
            minimum=bounds.least,
            maximum=bounds.most,
            exclusiveMinimum=bounds.above,
            exclusiveMaximum=bounds.below,
        )
    return schema | _choices(node)


def _scalar(node: Node, _: Components) -> Schema:
    return {"type": node.kind.value} | _choices(node)


def _array(node: Node, components: Components) -> Schema:
    assert node.item is not None
    schema: Schema = {"type": "array", "items": node_schema(node.item, components)}
    count = node.marker(Count)
    if count is not None:
        schema |= _drop_none(minItems=count.least, maxItems=count.most)
        if count.unique:
            schema["uniqueItems"] = True
    return schema


def _map(node: Node, components: Components) -> Schema:
    assert node.item is not None
    schema: Schema = {"type": "object"}
    if node.item.kind is not Kind.ANY or node.item.markers:
        schema["additionalProperties"] = node_schema(node.item, components)
    if node.key is not None and node.key.markers:  # dict[Annotated[str, ...], X]
        names = node_schema(node.key, components)
        schema["propertyNames"] = {k: v for k, v in names.items() if k != "type"}
    count = node.marker(Count)
    if count is not None:
        schema |= _drop_none(minProperties=count.least, maxProperties=count.most)
    return schema


def _object(node: Node, components: Components) -> Schema:
    assert node.cls is not None
    return components.ref(node.cls)


def _any(node: Node, _: Components) -> Schema:
    return {}


def _union(node: Node, components: Components) -> Schema:
    options: list[Schema] = []
    for option in node.options:
        schema = node_schema(option, components)
        options.extend(schema["anyOf"] if list(schema) == ["anyOf"] else [schema])
    return _compact(options)


def _compact(options: list[Schema]) -> Schema:
    """`X | None` as one schema where that says the same (`type: [string, null]`, an
    enum with null), which viewers show more plainly than `anyOf`."""
    others = [o for o in options if o != {"type": "null"}]
    if len(others) != 1 or len(others) == len(options):
        return {"anyOf": options}
    only = others[0]
    if isinstance(only.get("type"), str) and "enum" not in only and "const" not in only:
        return only | {"type": [only["type"], "null"]}
    if "enum" in only or "const" in only:
        values = only.get("enum", [only.get("const")])
        rest = {k: v for k, v in only.items() if k not in ("enum", "const", "type")}
        return rest | {"enum": [*values, None]}
    return {"anyOf": options}


def _literal(node: Node, _: Components) -> Schema:
    values = [_json(v) for v in node.values]
    return {"const": values[0]} if len(values) == 1 else {"enum": values}


def _choices(node: Node) -> Schema:
    choices = node.marker(Choices)
    return {"enum": [_json(v) for v in choices.values]} if choices is not None else {}


def _drop_none(**keywords: Any) -> Schema:
    return {name: value for name, value in keywords.items() if value is not None}


def _plain(value: Any) -> bool:
    if isinstance(value, tuple | list):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float | bool)


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _docstring(shape: Any) -> str:
    """The class's own docstring (not one inherited or generated), as prose."""
    cls = get_origin(shape) or shape
    doc = cls.__dict__.get("__doc__")
    if not doc or doc.startswith(cls.__name__ + "("):  # attrs and dataclass signatures
        return ""
    return " ".join(inspect.cleandoc(doc).split())


_WRITERS: dict[Kind, Callable[[Node, Components], Schema]] = {
    Kind.STRING: _string,
    Kind.INTEGER: _number,
    Kind.NUMBER: _number,
    Kind.BOOLEAN: _scalar,
    Kind.NULL: _scalar,
    Kind.ARRAY: _array,
    Kind.MAP: _map,
    Kind.OBJECT: _object,
    Kind.ANY: _any,
    Kind.UNION: _union,
    Kind.LITERAL: _literal,
}
