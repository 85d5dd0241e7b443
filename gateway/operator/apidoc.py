"""What the OpenAPI document says about one operation, and the small helpers to say it.

Each endpoint family declares its operations in `gateway.operator.schemas.<family>` as
one `Operation` per route, keyed by the route's endpoint name (`blueprint.function`, as
Quart's route table names it; `fast.<name>` for the plain-ASGI fast path). The generator
(`gateway.operator.openapi`) walks the app's real route table and looks each route up
here: a route without an entry still appears (generically) and the test lists it, so a
new route cannot go undocumented silently.
"""

from __future__ import annotations

from typing import Any

import attrs

Schema = dict[str, Any]

# What every authenticated operation can answer besides its success.
AUTH_ERRORS = (400, 401, 403, 408, 413, 429)


@attrs.frozen
class Operation:
    summary: str
    tag: str
    response: Schema | None = None  # the success body (JSON), or None for "not shown"
    status: int = 200
    request: Schema | None = None  # the request body (JSON unless `request_media_type`)
    body_required: bool = True
    errors: tuple[int, ...] = AUTH_ERRORS
    public: bool = False  # no authentication
    media_type: str = "application/json"  # of the success body
    stream: Schema | None = None  # a text/event-stream alternative (chunk schema)
    query: tuple[Schema, ...] = ()
    headers: tuple[Schema, ...] = ()
    description: str = ""
    request_media_type: str = "application/json"  # `multipart/form-data` for uploads
    # More media types of the success body (audio formats, subtitles): (type, schema)
    alternatives: tuple[tuple[str, Schema], ...] = ()


def obj(required: tuple[str, ...] = (), **properties: Schema) -> Schema:
    """An object with these properties (more may appear: answers grow compatibly)."""
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def all_required(**properties: Schema) -> Schema:
    """An object whose properties are all always present (more may appear), so that each
    name is written once rather than in the required list too."""
    return obj(tuple(properties), **properties)


def closed(required: tuple[str, ...] = (), **properties: Schema) -> Schema:
    """An object that admits only these properties (request bodies the gateway checks)."""
    return obj(required, **properties) | {"additionalProperties": False}


def arr(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def listing(item: Schema, **more: Schema) -> Schema:
    """A list answer: `object: "list"` and the items in `data`, then `more` properties
    (all of them always present)."""
    return all_required(object={"const": "list"}, data=arr(item), **more)


def deleted(kind: str | None = None) -> Schema:
    """What a DELETE answers: the id, `deleted: true`, and `object: kind` when given."""
    if kind is None:
        return all_required(id=STR, deleted={"const": True})
    return all_required(id=STR, object={"const": kind}, deleted={"const": True})


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def query(name: str, schema: Schema, description: str = "") -> Schema:
    return {"name": name, "in": "query", "required": False, "schema": schema} | (
        {"description": description} if description else {}
    )


def header(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "header",
        "required": False,
        "schema": STR,
        "description": description,
    }


STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
ANY_OBJ: Schema = {"type": "object"}
TIME: Schema = nullable({"type": "string", "format": "date-time"})
STRS: Schema = arr(STR)

# White space as Python's `str.strip` sees it (the hand-written checks strip; JSON
# Schema's `\s` differs), named so that the document and the server read it alike.
STRIPPED = (
    "\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
# A string with something besides white space (the server's "non-empty string").
FILLED: Schema = {"type": "string", "pattern": f"[^{STRIPPED}]"}


def filled(most: int | None = None, **extra: Any) -> Schema:
    """A non-blank string, at most `most` characters."""
    return FILLED | ({"maxLength": most} if most is not None else {}) | extra


def changes(schema: Schema, *, null_changes: bool = False) -> Schema:
    """A PATCH body: the fields of `schema`, at least one of them present (given a value,
    unless a null is a change too: `null_changes`)."""
    valued: Schema = {} if null_changes else {"not": {"type": "null"}}
    named = [
        {"required": [name], "properties": {name: valued}} if valued else {"required": [name]}
        for name in schema["properties"]
    ]
    return schema | {"anyOf": named}


MODEL: Schema = filled(description="A model id, `provider/model`, an alias, or `auto`")
# Vectors are only comparable within one model: retrieval takes no `auto`.
RETRIEVAL_MODEL: Schema = {
    "type": "string",
    "pattern": f"^(?!auto$).*[^{STRIPPED}]",
    "description": "A model id, `provider/model`, or an alias (not `auto`)",
}


def forced_provider(capability: str) -> Schema:
    """`provider` on a call body: one of the catalog's providers that does the work, and
    is configured (`provider_not_configured` otherwise); null leaves it to routing."""
    from providers.catalog import load_catalog

    ids = sorted(p.id for p in load_catalog().providers() if capability in p.capabilities)
    return {
        "anyOf": [{"enum": ids}, {"type": "null"}],
        "description": "Send to this provider only (one configured in the workspace)",
    }
