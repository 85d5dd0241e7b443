"""Reading a decoded JSON value into a declared type, with the checks the document states.

`parse(WebhookBody, body)` returns a `WebhookBody` or raises the spec's 400
`invalid_request` naming the first wrong place (`param`: `url`, `notify.email[2]`) and
the value found there. Every check comes from the declaration the document is written
from (`gateway.platform.shapes.schema`): a value the document calls wrong is refused
here, and one it calls right passes here (a family's own checks on meaning come after).

Null is a value, not an absence: a field takes `null` only when its type says `| None`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any, TypeVar, overload

from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.params import whole_number
from gateway.platform.shapes.markers import Choices, Count, Format, Length, Pattern
from gateway.platform.shapes.markers import Range as Bounds
from gateway.platform.shapes.nodes import Kind, Node, fields_needed, fields_of, is_open, node_of

T = TypeVar("T")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@overload
def parse(tp: type[T], value: Any, *, at: str = "") -> T: ...


@overload
def parse(tp: Any, value: Any, *, at: str = "") -> Any: ...


def parse(tp: Any, value: Any, *, at: str = "") -> Any:
    """`value` (decoded JSON) as a `tp`; a 400 naming the place `at` (a field path
    prefix) when it is not one. At the top (`at` empty), an object shape that gets
    something else says the request body must be a JSON object."""
    node = node_of(tp)
    if not at and node.kind is Kind.OBJECT and not isinstance(value, dict):
        raise invalid_request("The request body must be a JSON object.")
    return read(node, value, at)


def read(node: Node, value: Any, at: str) -> Any:
    """`value` read as `node` says (the reader of a query string uses it for values it
    has converted from text)."""
    if value is None and node.kind is not Kind.NULL and not node.nullable:
        if node.kind is Kind.ANY:
            return None
        raise _wrong(node, value, at)
    return _READERS[node.kind](node, value, at)


def describe(node: Node) -> str:
    """What a value of `node` is, in words: "a string", "an array of strings"."""
    if node.kind is Kind.UNION:
        words = [describe(o) for o in node.options if o.kind is not Kind.NULL]
        return " or ".join(dict.fromkeys(words))
    if node.kind is Kind.LITERAL or node.marker(Choices) is not None:
        values = node.values or node.marker(Choices).values
        return f"one of {list(values)}"
    if node.kind is Kind.ARRAY and node.item is not None:
        return "an array of " + _plural(describe(node.item))
    return _WORDS[node.kind]


def _plural(words: str) -> str:
    if words.startswith(("a ", "an ")):
        return words.split(" ", 1)[1] + "s"
    return "values " + words


_WORDS = {
    Kind.STRING: "a string",
    Kind.INTEGER: "an integer",
    Kind.NUMBER: "a number",
    Kind.BOOLEAN: "a boolean",
    Kind.NULL: "null",
    Kind.MAP: "an object",
    Kind.OBJECT: "an object",
    Kind.ANY: "a JSON value",
    Kind.ARRAY: "an array",
}


def _wrong(node: Node, value: Any, at: str) -> ApiError:
    return invalid_request(f"'{at}' must be {describe(node)}.", param=at, value=value)


def _refuse(at: str, value: Any, says: str) -> ApiError:
    return invalid_request(f"'{at}' {says}.", param=at, value=value)


def _string(node: Node, value: Any, at: str) -> Any:
    if not isinstance(value, str):
        raise _wrong(node, value, at)
    length = node.marker(Length)
    if length is not None:
        if length.least is not None and len(value) < length.least:
            raise _refuse(at, value, f"must be at least {length.least} characters long")
        if length.most is not None and len(value) > length.most:
            raise _refuse(at, value, f"is longer than {length.most} characters")
    pattern = node.marker(Pattern)
    if pattern is not None and not pattern.matches(value):
        meaning = pattern.meaning or f"text matching {pattern.regex}"
        raise _refuse(at, value, f"must be {meaning}, not {_quoted(value)}")
    fmt = node.marker(Format)
    if fmt is not None:
        moment = _formatted(fmt.name, value, at)
        if node.cls is not None:  # declared as a datetime or a date
            return moment
    return _chosen(node, value, at)


def _quoted(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:77] + "...")


def _formatted(name: str, value: str, at: str) -> Any:
    """A date-time or date as the Python value; other formats stay text."""
    try:
        if name == "date-time":
            moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
            if moment.tzinfo is None:
                raise ValueError("no zone")
            return moment
        if name == "date":
            if not _DATE.match(value):
                raise ValueError("not YYYY-MM-DD")
            return date.fromisoformat(value)
    except ValueError:
        what = "an ISO 8601 date and time with its zone" if name == "date-time" else "a date"
        raise _refuse(at, value, f"must be {what} (YYYY-MM-DD...)") from None
    return value


def _integer(node: Node, value: Any, at: str) -> Any:
    whole = whole_number(value)  # JSON Schema: 2.0 is an integer
    if whole is None:
        raise _wrong(node, value, at)
    return _chosen(node, _bounded(node, whole, at), at)


def _number(node: Node, value: Any, at: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(node, value, at)
    return float(_chosen(node, _bounded(node, value, at), at))


def _bounded(node: Node, value: float, at: str) -> Any:
    bounds = node.marker(Bounds)
    if bounds is None:
        return value
    low, high = bounds.least, bounds.most
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            raise _refuse(at, value, f"must be between {low:g} and {high:g}")
        if low is not None:
            raise _refuse(at, value, f"must be at least {low:g}")
        raise _refuse(at, value, f"must be at most {high:g}")
    if bounds.above is not None and not value > bounds.above:
        raise _refuse(at, value, f"must be greater than {bounds.above:g}")
    if bounds.below is not None and not value < bounds.below:
        raise _refuse(at, value, f"must be less than {bounds.below:g}")
    return value


def _boolean(node: Node, value: Any, at: str) -> Any:
    if not isinstance(value, bool):
        raise _wrong(node, value, at)
    return value


def _null(node: Node, value: Any, at: str) -> Any:
    if value is not None:
        raise _wrong(node, value, at)
    return None


def _chosen(node: Node, value: Any, at: str) -> Any:
    choices = node.marker(Choices)
    if choices is not None and not _among(value, choices.values):
        raise _wrong(node, value, at)
    return value


def _among(value: Any, values: tuple[Any, ...]) -> bool:
    """Membership where `True` is not `1` (JSON keeps booleans and numbers apart)."""
    return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in values)


def _array(node: Node, value: Any, at: str) -> Any:
    """Items first, then their number: a wrong item is the clearer complaint."""
    if not isinstance(value, list):
        raise _wrong(node, value, at)
    assert node.item is not None
    items = [read(node.item, item, f"{at}[{i}]") for i, item in enumerate(value)]
    _counted(node, value, at, "items")
    count = node.marker(Count)
    if count is not None and count.unique and len(set(map(repr, value))) < len(value):
        raise _refuse(at, value, "must not hold the same item twice")
    return tuple(items) if node.cls is tuple else items


def _counted(node: Node, value: Any, at: str, what: str) -> None:
    count = node.marker(Count)
    if count is None:
        return
    if count.least is not None and len(value) < count.least:
        raise _refuse(at, value, f"must hold at least {count.least} {what}")
    if count.most is not None and len(value) > count.most:
        raise _refuse(at, len(value), f"must hold up to {count.most} {what}")


def _map(node: Node, value: Any, at: str) -> Any:
    if not isinstance(value, dict):
        raise _wrong(node, value, at)
    _counted(node, value, at, "entries")
    assert node.item is not None
    if node.key is not None and node.key.markers:
        for key in value:
            read(node.key, key, _join(at, key))
    return {key: read(node.item, item, _join(at, key)) for key, item in value.items()}


def _object(node: Node, value: Any, at: str) -> Any:
    if not isinstance(value, dict):
        raise _wrong(node, value, at)
    assert node.cls is not None
    return node.cls(**read_fields(node.cls, value, at))


def read_fields(cls: type, value: Mapping[str, Any], at: str) -> dict[str, Any]:
    """The declared fields of `cls` read from `value`, by attribute name (absent
    optional fields left out, so their defaults apply)."""
    fields = fields_of(cls)
    if not is_open(cls):
        known = {f.key for f in fields}
        for key in value:
            if key not in known:
                place = _join(at, key)
                names = ", ".join(f.key for f in fields)
                raise invalid_request(f"Unknown field '{place}'; known: {names}.", param=place)
    if len(value) < fields_needed(cls):
        names = ", ".join(f"'{f.key}'" for f in fields)
        raise invalid_request(f"Give at least one of {names}.", param=at or None)
    found: dict[str, Any] = {}
    for field in fields:
        place = _join(at, field.key)
        if field.key not in value:
            if field.required:
                raise invalid_request(f"'{place}' is required.", param=place)
            continue
        found[field.attr] = read(field.node, value[field.key], place)
    return found


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _any(node: Node, value: Any, at: str) -> Any:
    return value


def _union(node: Node, value: Any, at: str) -> Any:
    """The first option that takes the value. When exactly one option is of the value's
    JSON type, its own complaint is the clearest one to give."""
    if value is None and node.nullable:
        return None
    matching = [o for o in node.options if _same_type(o, value)]
    if len(matching) > 1 and isinstance(value, dict):
        matching = _by_discriminator(matching, value, at)
    if len(matching) == 1:
        return read(matching[0], value, at)
    refusals: list[ApiError] = []
    for option in matching:
        try:
            return read(option, value, at)
        except ApiError as refusal:
            refusals.append(refusal)
    raise _clearest(node, value, at, refusals)


def _clearest(node: Node, value: Any, at: str, refusals: list[ApiError]) -> ApiError:
    """Why no option of a union took the value: for objects, the refusal about what is
    there (a wrong field) over one about what is missing; when each option misses a
    field, say which fields would do."""
    if not isinstance(value, dict) or not refusals:
        return _wrong(node, value, at)
    wrong = [r for r in refusals if not r.message.endswith(" is required.")]
    if wrong:
        return wrong[0]
    missing = [str(r.extra.get("param", "")).removeprefix(f"{at}.") for r in refusals]
    names = " or ".join(f"'{name}'" for name in dict.fromkeys(missing))
    place = f"'{at}' needs" if at else "The body needs"
    return invalid_request(f"{place} {names}.", param=at or None, value=value)


def _by_discriminator(options: list[Node], value: dict[str, Any], at: str) -> list[Node]:
    """Object shapes told apart by a field each declares as a `Literal` (`severity`):
    the one whose literal the value holds, or a 400 naming the field and its choices."""
    key = discriminator(options)
    if key is None:
        return options
    place = _join(at, key)
    for option in options:
        if _among(value.get(key), _literal_of(option, key)):
            return [option]
    choices = [v for option in options for v in _literal_of(option, key)]
    if key not in value:
        raise invalid_request(f"'{place}' is required.", param=place)
    raise _refuse(place, value.get(key), f"must be one of {choices}")


def discriminator(options: list[Node] | tuple[Node, ...]) -> str | None:
    """The field every object option declares as a `Literal`, if there is one."""
    if not all(o.kind is Kind.OBJECT and o.cls is not None for o in options):
        return None
    keys = [
        {f.key for f in fields_of(o.cls) if f.node.kind is Kind.LITERAL}  # type: ignore[arg-type]
        for o in options
    ]
    shared = set.intersection(*keys) if keys else set()
    return min(shared) if shared else None


def _literal_of(option: Node, key: str) -> tuple[Any, ...]:
    assert option.cls is not None
    field = next(f for f in fields_of(option.cls) if f.key == key)
    return field.node.values


def _same_type(node: Node, value: Any) -> bool:
    if node.kind is Kind.LITERAL:
        return _among(value, node.values)
    if node.kind in (Kind.ANY, Kind.UNION):
        return True
    return isinstance(value, _JSON_TYPES[node.kind]) and not (
        isinstance(value, bool) and node.kind in (Kind.INTEGER, Kind.NUMBER)
    )


_JSON_TYPES: dict[Kind, type | tuple[type, ...]] = {
    Kind.STRING: str,
    Kind.INTEGER: (int, float),
    Kind.NUMBER: (int, float),
    Kind.BOOLEAN: bool,
    Kind.NULL: type(None),
    Kind.ARRAY: list,
    Kind.MAP: dict,
    Kind.OBJECT: dict,
}


def _literal(node: Node, value: Any, at: str) -> Any:
    if not _among(value, node.values):
        raise _wrong(node, value, at)
    return value


_READERS: dict[Kind, Callable[[Node, Any, str], Any]] = {
    Kind.STRING: _string,
    Kind.INTEGER: _integer,
    Kind.NUMBER: _number,
    Kind.BOOLEAN: _boolean,
    Kind.NULL: _null,
    Kind.ARRAY: _array,
    Kind.MAP: _map,
    Kind.OBJECT: _object,
    Kind.ANY: _any,
    Kind.UNION: _union,
    Kind.LITERAL: _literal,
}
