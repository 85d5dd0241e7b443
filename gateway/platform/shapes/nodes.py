"""A declared type read once into a tree of nodes that the schema writer and the reader
walk: what JSON value each place holds, and its markers.

Supported: `str`, `int`, `float`, `bool`, `None`, `datetime` and `date` (ISO 8601
strings), `Literal[...]`, `X | Y` (`None` among them: the value may be null),
`tuple[X, ...]`, `list[X]`, `Sequence[X]`, `dict[str, X]`, `Mapping[str, X]`, `Any` (any
JSON value), attrs classes and `TypedDict`s (named objects), each possibly
`Annotated[..., markers]`.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import types
import typing
from datetime import date, datetime
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

import attrs

from gateway.platform.shapes.markers import OPEN, Format, Key


class Kind(enum.Enum):
    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    NULL = "null"
    ARRAY = "array"
    MAP = "map"  # an object whose keys are free: dict[str, X]
    OBJECT = "object"  # a named class: attrs or TypedDict
    ANY = "any"
    UNION = "union"
    LITERAL = "literal"


@attrs.frozen(eq=False)
class Node:
    kind: Kind
    markers: tuple[object, ...] = ()
    item: Node | None = None  # ARRAY, MAP
    options: tuple[Node, ...] = ()  # UNION
    cls: type | None = None  # OBJECT; ARRAY: tuple or list; STRING: datetime or date
    values: tuple[Any, ...] = ()  # LITERAL

    def marker(self, kind: type[Any]) -> Any:
        """The node's marker of type `kind`, or None."""
        return next((m for m in self.markers if isinstance(m, kind)), None)

    @property
    def nullable(self) -> bool:
        return self.kind is Kind.NULL or any(o.kind is Kind.NULL for o in self.options)


@attrs.frozen(eq=False)
class Field:
    attr: str  # the Python name
    key: str  # the JSON key
    node: Node
    required: bool
    default: Any = None  # a request field's default, when it has a plain one


_SCALARS = {
    str: Kind.STRING,
    int: Kind.INTEGER,
    float: Kind.NUMBER,
    bool: Kind.BOOLEAN,
    type(None): Kind.NULL,
}
_SEQUENCES = (tuple, list, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)


def node_of(tp: Any, markers: tuple[object, ...] = ()) -> Node:
    """The node of a declared type (raises TypeError for a type it cannot describe).
    Declarations are module-level and few: each is read once."""
    return _node(tp, markers)


@functools.cache
def _node(tp: Any, markers: tuple[object, ...]) -> Node:
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return node_of(args[0], markers + tuple(args[1:]))
    if tp in _SCALARS:
        return Node(_SCALARS[tp], markers)
    if tp is datetime or tp is date:  # read into the Python value, written as ISO 8601
        fmt = Format("date-time" if tp is datetime else "date")
        return Node(Kind.STRING, (fmt, *markers), cls=tp)
    if tp is Any or tp is object:
        return Node(Kind.ANY, markers)
    if origin is Literal:
        return Node(Kind.LITERAL, markers, values=args)
    if origin in (typing.Union, types.UnionType):
        return Node(Kind.UNION, markers, options=tuple(node_of(a) for a in args))
    if origin in _SEQUENCES:
        cls = tuple if origin is tuple else list
        return Node(Kind.ARRAY, markers, item=node_of(args[0]), cls=cls)
    if origin in _MAPPINGS:
        return Node(Kind.MAP, markers, item=node_of(args[1]))
    if isinstance(tp, type) and (attrs.has(tp) or typing.is_typeddict(tp)):
        return Node(Kind.OBJECT, markers, cls=tp)
    raise TypeError(f"no JSON shape for {tp!r}")


def fields_of(cls: type) -> tuple[Field, ...]:
    """The fields of an attrs class or a TypedDict, in declaration order."""
    return _fields(cls)


@functools.cache
def _fields(cls: Any) -> tuple[Field, ...]:
    hints = get_type_hints(cls, include_extras=True)
    if typing.is_typeddict(cls):
        total: bool = getattr(cls, "__total__", True)
        return tuple(_typed_dict_field(name, hint, total) for name, hint in hints.items())
    return tuple(_attrs_field(a, hints[a.name]) for a in attrs.fields(cls))


def _typed_dict_field(name: str, hint: Any, total: bool) -> Field:
    required = total
    if get_origin(hint) in (Required, NotRequired):
        required = get_origin(hint) is Required
        hint = get_args(hint)[0]
    node = node_of(hint)
    return Field(name, _key(name, node), node, required)


def _attrs_field(attribute: attrs.Attribute[Any], hint: Any) -> Field:
    node = node_of(hint)
    default = attribute.default
    required = default is attrs.NOTHING
    if required or isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = None  # none, or made per instance: not a value the document can show
    return Field(attribute.name, _key(attribute.name, node), node, required, default)


def _key(name: str, node: Node) -> str:
    key = node.marker(Key)
    return key.name if key is not None else name


def is_open(cls: type) -> bool:
    """Whether unknown fields are allowed: always for answers (they grow compatibly),
    for a request shape only when marked `accepts_more`."""
    return typing.is_typeddict(cls) or bool(getattr(cls, OPEN, False))


def shape_name(cls: type) -> str:
    """The component name of a named shape."""
    return str(getattr(cls, "__shape_name__", cls.__name__))
