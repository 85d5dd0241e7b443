"""Declared shapes: one declaration per request and answer shape, from which the OpenAPI
document's schemas and the server's checks both come (`markers` for what a field says
beyond its type, `schema` for the JSON Schema, `parse` and `query` for reading bodies
and query strings)."""

from gateway.platform.shapes.markers import (
    EMAIL,
    NON_BLANK,
    NOT_NULL,
    SPACE,
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
    needs_fields,
    together,
)
from gateway.platform.shapes.parse import parse
from gateway.platform.shapes.query import parse_query
from gateway.platform.shapes.schema import Components, Schema, schema_of

__all__ = [
    "EMAIL",
    "NON_BLANK",
    "NOT_NULL",
    "SPACE",
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
    "needs_fields",
    "parse",
    "parse_query",
    "schema_of",
    "together",
]
