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

from gateway.platform.shapes.markers import NEEDED, NOT_NULL, OPEN, Format, Key


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
    key: Node | None = None  # MAP: what its keys are (a string, maybe with markers)
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
    if NOT_NULL in markers and origin in (typing.Union, types.UnionType):
        kept = tuple(a for a in args if a is not type(None))
        rest = tuple(m for m in markers if m != NOT_NULL)
        return node_of(kept[0] if len(kept) == 1 else typing.Union[kept], rest)  # noqa: UP007
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
        return Node(Kind.MAP, markers, item=node_of(args[1]), key=node_of(args[0]))
    if isinstance(tp, type) and (attrs.has(tp) or typing.is_typeddict(tp)):
        return Node(Kind.OBJECT, markers, cls=tp)
    if typing.is_typeddict(origin):  # a generic TypedDict made concrete: ListOf[Incident]
        return Node(Kind.OBJECT, markers, cls=tp)
    raise TypeError(f"no JSON shape for {tp!r}")


def fields_of(cls: type) -> tuple[Field, ...]:
    """The fields of an attrs class or a TypedDict, in declaration order."""
    return _fields(cls)


@functools.cache
def _fields(cls: Any) -> tuple[Field, ...]:
    origin = get_origin(cls) or cls
    hints = get_type_hints(origin, include_extras=True)
    if origin is not cls:  # ListOf[Incident]: the generic's fields with T = Incident
        mapping = dict(zip(origin.__parameters__, get_args(cls), strict=True))
        hints = {name: _substituted(hint, mapping) for name, hint in hints.items()}
    if typing.is_typeddict(origin):
        total: bool = getattr(origin, "__total__", True)
        return tuple(_typed_dict_field(name, hint, total) for name, hint in hints.items())
    return tuple(_attrs_field(a, hints[a.name]) for a in attrs.fields(cls))


def _substituted(hint: Any, mapping: dict[Any, Any]) -> Any:
    if isinstance(hint, typing.TypeVar):
        return mapping[hint]
    parameters = getattr(hint, "__parameters__", ())
    return hint[tuple(mapping[p] for p in parameters)] if parameters else hint


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


def is_open(cls: Any) -> bool:
    """Whether unknown fields are allowed: always for answers (they grow compatibly),
    for a request shape only when marked `accepts_more`."""
    return typing.is_typeddict(get_origin(cls) or cls) or bool(getattr(cls, OPEN, False))


def fields_needed(cls: Any) -> int:
    """How many fields a request shape needs at least (`@needs_fields(1)`: a change
    that changes nothing is refused)."""
    return int(getattr(cls, NEEDED, 0))


def shape_name(cls: Any) -> str:
    """The component name of a named shape (`ListOf[Incident]`: `IncidentList`, after
    the generic's `__shape_name__` pattern, else the names run together)."""
    origin = get_origin(cls)
    if origin is not None:
        names = [shape_name(a) for a in get_args(cls)]
        pattern = getattr(origin, "__shape_name__", origin.__name__ + "{}")
        return str(pattern).format(*names)
    return str(getattr(cls, "__shape_name__", cls.__name__))
