"""Declared shapes (`gateway.platform.shapes`): the schema the document states and the
checks the server makes come from one declaration, so they agree on every value.

The agreement is checked as a property: for values drawn around each declared shape
(its own keys, with values of every JSON type, in and out of bounds), `parse` accepts
exactly what a JSON Schema validator accepts under the written schema.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from gateway.platform.errors import ApiError
from gateway.platform.shapes import (
    NON_BLANK,
    Choices,
    Components,
    Count,
    Doc,
    Example,
    Key,
    Length,
    Pattern,
    Range,
    accepts_more,
    parse,
    parse_query,
    schema_of,
    together,
)
from gateway.platform.shapes.nodes import Kind, Node, fields_of


@attrs.frozen
class Condition:
    metric: Annotated[str, Choices(("error_rate", "latency_p95_ms"))]
    threshold: Annotated[float, Range(least=0)]
    window_minutes: Annotated[int, Range(least=1, most=10080)] = 5


@attrs.frozen
class Alert:
    """An alert rule."""

    name: Annotated[str, NON_BLANK, Length(most=20), Doc("Shown in the list")]
    condition: Condition
    emails: Annotated[tuple[str, ...], Count(least=1, most=3, unique=True)] = ()
    webhook: str | None = None
    mode: Literal["any", "all"] = "any"
    stop: str | list[str] | None = None
    labels: dict[str, Annotated[str, Length(most=5)]] = attrs.field(factory=dict)
    since: datetime | None = None
    origin: Annotated[str | None, Key("from")] = None
    extra: Any = None
    weights: dict[Annotated[str, Pattern("^[0-9]+$", "a number")], int] = attrs.field(factory=dict)


@accepts_more
@attrs.frozen
class Loose:
    flag: bool = False
    ratio: Annotated[float, Range(above=0, below=1)] = 0.5


class Row(TypedDict):
    """One row of an answer."""

    id: str
    size: NotRequired[int | None]


SHAPES = (Alert, Loose, Condition)


def validator(tp: type) -> Draft202012Validator:
    components = Components()
    schema = schema_of(tp, components) | {"$defs": {}}
    document = {"components": {"schemas": components.schemas}} | schema
    return Draft202012Validator(document, format_checker=FormatChecker())


def accepted(tp: type, value: Any) -> bool:
    try:
        parse(tp, value, at="body")
    except ApiError as error:
        assert error.status == 400 and error.code == "invalid_request"
        return False
    return True


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 20_000),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", " ", "a", "error_rate", "any", "all", "x" * 21, "12345", "123456"]),
    st.sampled_from(["2026-11-27T10:00:00Z", "2026-11-27T10:00:00", "2026-11-27", "soon"]),
    st.sampled_from(["a@b.c", "d@e.f"]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


def around(tp: type) -> st.SearchStrategy[Any]:
    """Objects with `tp`'s keys (required ones mostly there, one unknown now and then)
    holding plausible values of each field's type or any JSON value."""
    fields = fields_of(tp)
    values = {f.key: st.one_of(plausible(f.node), plausible(f.node), JSON) for f in fields}
    required = {f.key: values[f.key] for f in fields if f.required}
    optional = {f.key: values[f.key] for f in fields if not f.required}
    keyed = st.one_of(
        st.fixed_dictionaries(required, optional=optional),
        st.fixed_dictionaries({}, optional=values),
    )
    unknown = st.dictionaries(st.sampled_from(["unknown"]), JSON, min_size=1, max_size=1)
    return st.one_of(keyed, keyed, keyed, st.builds(lambda a, b: a | b, keyed, unknown), JSON)


def plausible(node: Node) -> st.SearchStrategy[Any]:
    """Values of the node's JSON type, near and across its bounds."""
    if node.kind is Kind.OBJECT:
        assert node.cls is not None
        return around(node.cls)
    if node.kind in (Kind.ARRAY, Kind.MAP):
        assert node.item is not None
        if node.kind is Kind.ARRAY:
            return st.lists(plausible(node.item), max_size=4)
        return st.dictionaries(st.text(max_size=3), plausible(node.item), max_size=3)
    if node.kind is Kind.UNION:
        return st.one_of([plausible(o) for o in node.options])
    if node.kind is Kind.LITERAL:
        return st.sampled_from(node.values)
    choices = node.marker(Choices)
    if choices is not None:
        return st.sampled_from(choices.values)
    return PLAUSIBLE[node.kind]


PLAUSIBLE: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.STRING: st.one_of(
        st.text(max_size=22), st.sampled_from(["2026-11-27T10:00:00Z", "2026-11-27T10:00:00"])
    ),
    Kind.INTEGER: st.integers(-2, 10_100),
    Kind.NUMBER: st.one_of(st.floats(-1, 2, allow_nan=False), st.integers(-1, 2)),
    Kind.BOOLEAN: st.booleans(),
    Kind.NULL: st.none(),
    Kind.ANY: JSON,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_reader_accepts_exactly_what_the_written_schema_accepts(shape: type) -> None:
    check = validator(shape)

    seen = {True: 0, False: 0}

    @settings(
        max_examples=500,
        derandomize=True,
        deadline=None,  # a loaded host took 536 ms once: no timing here
        suppress_health_check=list(HealthCheck),
    )
    @given(value=around(shape))
    def agree(value: Any) -> None:
        valid = check.is_valid(value)
        seen[valid] += 1
        assert accepted(shape, value) == valid, value

    agree()
    # both sides of the line were tried (the generator's share of valid values varies
    # a little with the run: Alert's was 8 of 500 once under xdist)
    assert min(seen.values()) >= 5, seen


def test_a_parsed_body_is_the_declared_type_with_its_defaults() -> None:
    alert = parse(
        Alert,
        {
            "name": "slow",
            "condition": {"metric": "latency_p95_ms", "threshold": 2},
            "emails": ["a@b.c"],
            "stop": ["x"],
            "since": "2026-11-27T10:00:00Z",
            "from": "console",
        },
    )
    assert alert == Alert(
        name="slow",
        condition=Condition("latency_p95_ms", 2.0),
        emails=("a@b.c",),
        stop=["x"],
        since=datetime(2026, 11, 27, 10, tzinfo=UTC),
        origin="console",
    )
    assert isinstance(alert.condition.threshold, float)


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ([], None, "The request body must be a JSON object."),
        ({}, "name", "'name' is required."),
        ({"name": " ", "condition": {}}, "name", "'name' must be a non-empty string, not ' '."),
        ({"name": "a", "condition": {"metric": "cpu"}}, "condition.metric", "must be one of"),
        ({"name": "a", "condition": None}, "condition", "'condition' must be an object."),
        ({"name": "a", "nope": 1}, "nope", "Unknown field 'nope'; known: name, condition, emails"),
        (
            {"name": "a", "condition": {"metric": "error_rate", "threshold": 1}, "emails": [1]},
            "emails[0]",
            "'emails[0]' must be a string.",
        ),
        (
            {"name": "a", "condition": {"metric": "error_rate", "threshold": -1}},
            "condition.threshold",
            "must be at least 0",
        ),
        (
            {"name": "a", "condition": {"metric": "error_rate", "threshold": 1}, "stop": 3},
            "stop",
            "'stop' must be a string or an array of strings.",
        ),
        (
            {"name": "a", "condition": {"metric": "error_rate", "threshold": 1}, "since": "x"},
            "since",
            "ISO 8601",
        ),
    ],
)
def test_a_wrong_body_is_a_400_naming_the_place(body: Any, param: str | None, message: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse(Alert, body)
    assert refused.value.status == 400
    assert refused.value.extra["param"] == param
    assert message in refused.value.message


def test_the_schema_says_what_the_declaration_says() -> None:
    components = Components()
    assert schema_of(Alert, components) == {"$ref": "#/components/schemas/Alert"}
    alert = components.schemas["Alert"]
    assert alert["description"] == "An alert rule."
    assert alert["required"] == ["name", "condition"]
    assert alert["additionalProperties"] is False
    name = alert["properties"]["name"]
    assert name == {
        "type": "string",
        "maxLength": 20,
        "pattern": NON_BLANK.regex,
        "description": "Shown in the list",
    }
    assert alert["properties"]["webhook"] == {"type": ["string", "null"]}
    assert alert["properties"]["mode"] == {"enum": ["any", "all"], "default": "any"}
    assert "from" in alert["properties"] and "origin" not in alert["properties"]
    assert components.schemas["Condition"]["properties"]["window_minutes"]["default"] == 5
    row = schema_of(Row, components)
    assert components.schemas["Row"] == {
        "type": "object",
        "description": "One row of an answer.",
        "properties": {
            "id": {"type": "string"},
            "size": {"type": ["integer", "null"]},
        },
        "required": ["id"],
    }
    assert row == {"$ref": "#/components/schemas/Row"}


def test_a_map_whose_keys_are_declared_states_and_checks_them() -> None:
    components = Components()
    schema_of(Alert, components)
    weights = components.schemas["Alert"]["properties"]["weights"]
    assert weights["propertyNames"] == {"pattern": "^[0-9]+$"}
    condition = {"metric": "error_rate", "threshold": 1}
    assert parse(Alert, {"name": "a", "condition": condition, "weights": {"12": 1}})
    with pytest.raises(ApiError) as refused:
        parse(Alert, {"name": "a", "condition": condition, "weights": {"x": 1}})
    assert refused.value.extra["param"] == "weights.x"


def test_bounds_equal_in_value_keep_their_own_writing() -> None:
    """`Range(least=0, most=1)` and `Range(least=0.0, most=1.0)` compared equal, and
    typing's cache gave both declarations the first one read: the API reference said
    `0 to 1` or `0.0 to 1.0` by which family was imported first."""
    whole = Annotated[float, Range(least=0, most=1)]
    pointed = Annotated[float, Range(least=0.0, most=1.0)]
    components = Components()
    assert repr(schema_of(whole, components)["maximum"]) == "1"
    assert repr(schema_of(pointed, components)["maximum"]) == "1.0"


def test_rules_over_several_fields_are_written_as_all_of() -> None:
    one_bound = {"not": {"required": ["low", "high"]}}

    @together(one_bound)
    @attrs.frozen
    class Bounded:
        low: int | None = None
        high: int | None = None

    components = Components()
    schema_of(Bounded, components)
    assert components.schemas["Bounded"]["allOf"] == [one_bound]


def test_two_shapes_of_one_name_are_refused() -> None:
    components = Components()
    components.ref(Row)

    class Row2(TypedDict):
        other: str

    Row2.__name__ = "Row"
    with pytest.raises(ValueError, match="two shapes named 'Row'"):
        components.ref(Row2)


def test_examples_are_written_and_open_shapes_allow_more() -> None:
    @accepts_more
    @attrs.frozen
    class Asked:
        model: Annotated[str, Example("gpt-4o-mini")] = "auto"

    components = Components()
    schema_of(Asked, components)
    assert components.schemas["Asked"]["properties"]["model"]["examples"] == ["gpt-4o-mini"]
    assert "additionalProperties" not in components.schemas["Asked"]
    assert parse(Asked, {"model": "m", "unknown": 1}) == Asked("m")


@attrs.frozen
class Page:
    limit: Annotated[int, Range(least=1, most=100)] = 20
    day: date | None = None
    verbose: bool = False
    kind: Literal["a", "b"] | None = None
    tags: tuple[str, ...] = ()


def test_a_query_string_is_read_into_its_declared_type() -> None:
    from werkzeug.datastructures import MultiDict

    args = MultiDict(
        [("limit", "5"), ("day", "2026-11-27"), ("verbose", "true"), ("tags", "x"), ("tags", "y")]
    )
    assert parse_query(Page, args) == Page(5, date(2026, 11, 27), True, None, ("x", "y"))
    assert parse_query(Page, {}) == Page()
    for wrong, param in (
        ({"limit": "0"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"verbose": "yes"}, "verbose"),
        ({"day": "27/11/2026"}, "day"),
        ({"kind": "c"}, "kind"),
    ):
        with pytest.raises(ApiError) as refused:
            parse_query(Page, wrong)
        assert refused.value.extra["param"] == param
