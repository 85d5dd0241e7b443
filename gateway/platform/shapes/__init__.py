"""Declared shapes: one declaration per request and answer shape, from which the OpenAPI
document's schemas and the server's checks both come (`markers` for what a field says
beyond its type, `schema` for the JSON Schema, `parse` and `query` for reading bodies
and query strings)."""

from gateway.platform.shapes.markers import (
    NON_BLANK,
    Choices,
    Count,
    Doc,
    Example,
    Format,
    Key,
    Length,
    Pattern,
    Range,
    accepts_more,
)
from gateway.platform.shapes.parse import parse
from gateway.platform.shapes.query import parse_query
from gateway.platform.shapes.schema import Components, Schema, schema_of

__all__ = [
    "NON_BLANK",
    "Choices",
    "Components",
    "Count",
    "Doc",
    "Example",
    "Format",
    "Key",
    "Length",
    "Pattern",
    "Range",
    "Schema",
    "accepts_more",
    "parse",
    "parse_query",
    "schema_of",
]
