"""The OpenAPI 3.1 document, generated from the app's own route table and the types its
routes declare.

Routes come from Quart's `url_map`, which holds the plain-ASGI fast path's routes too
(`gateway.app.factory.fast_path_rules`); what each one reads and
answers comes from the `Operation` it declares (`gateway.platform.apidoc`): the input
and output types of its family, written as JSON Schema by `gateway.platform.shapes`,
which also checks what the server reads. Nothing here lists paths or fields by hand, so
a route added anywhere appears at once, and a route that declares nothing is listed by
`undocumented` (a test fails on it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from gateway.platform.apidoc import (
    UNDECLARED,
    WORKSPACE_HEADER,
    Content,
    Header,
    Operation,
    operation_of,
)
from gateway.platform.errors import Error
from gateway.platform.shapes import Components, Schema, schema_of
from gateway.platform.shapes.query import query_parameters

SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})
SKIPPED_ENDPOINTS = frozenset({"static"})  # Quart's default static route: no folder, no files
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_PARAM = re.compile(r"<(?:[a-z]+:)?([A-Za-z_][A-Za-z0-9_]*)>")
STATUS_TEXT = {
    400: "Invalid request",
    401: "Missing or invalid API key",
    403: "The key lacks the permission",
    404: "Not found (also for another workspace's ids)",
    405: "Method not allowed",
    408: "The request body did not arrive in time",
    409: "Conflict with the current state",
    410: "Gone: past its download window",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Semantically invalid",
    426: "Upgrade required: a WebSocket route asked without the upgrade",
    429: "A rate limit of the key was reached",
    500: "The gateway failed unexpectedly",
    501: "Not available in this installation",
    502: "The provider answered with an error",
    503: "No provider could serve the request now",
    504: "The provider did not answer in time",
    507: "The workspace's storage quota would be exceeded",
}
SUCCESS_TEXT = {101: "Switching Protocols: the connection is a WebSocket from here on"}
# What any authenticated route, and any route that reads a body, can answer.
AUTHENTICATED = {401: ("invalid_api_key",), 403: ("insufficient_permissions",)}
READS_BODY = {400: ("invalid_request", "invalid_json"), 408: ("request_timeout",)}
BODY_SIZE = {413: ("request_too_large",)}
READS_QUERY = {400: ("invalid_request",)}
IN_A_WORKSPACE = {404: ("workspace_not_found",)}


@attrs.frozen
class Route:
    method: str
    path: str  # OpenAPI form: /v1/things/{thing_id}
    endpoint: str
    parameters: tuple[str, ...] = ()
    operation: Operation | None = None


def quart_routes(app: Any) -> list[Route]:
    """Every (method, rule) of a Quart app's route table, in OpenAPI path form, with the
    operation its view declared."""
    found = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in SKIPPED_ENDPOINTS:
            continue
        path = _PARAM.sub(r"{\1}", rule.rule)
        params = tuple(_PARAM.findall(rule.rule))
        declared = operation_of(app.view_functions.get(rule.endpoint))
        for method in sorted(set(rule.methods or ()) - SKIPPED_METHODS):
            found.append(Route(method, path, rule.endpoint, params, declared))
    return found


def app_routes(app: Any) -> list[Route]:
    """Every route of the app: Quart's table holds the fast path's routes too
    (`gateway.app.factory.fast_path_rules`)."""
    return quart_routes(app)


def undocumented(routes: Iterable[Route]) -> list[Route]:
    """Routes that declare no `Operation`, or one that leaves out what it answers or, for
    a method with a body, what it reads."""
    return [r for r in routes if not _declared(r)]


def _declared(route: Route) -> bool:
    op = route.operation
    if op is None:
        return False
    if op.answer is UNDECLARED:
        return False
    return route.method not in BODY_METHODS or op.body is not UNDECLARED


def build_document(routes: Iterable[Route], *, version: str) -> dict[str, Any]:
    components = Components()
    error = components.ref(Error)
    paths: dict[str, dict[str, Any]] = {}
    ids: set[str] = set()
    for route in routes:
        doc = _operation(route, route.operation or _generic(route), components, error)
        if doc["operationId"] in ids:  # one view for several methods (PATCH and PUT)
            doc["operationId"] += "_" + route.method.lower()
        ids.add(doc["operationId"])
        paths.setdefault(route.path, {})[route.method.lower()] = doc
    return {
        "openapi": "3.1.0",
        "info": {"title": "AI gateway", "version": version, "description": _description()},
        "servers": [{"url": "/"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(components.schemas.items())),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (gw_admin_..., gw_prod_..., gw_dev_...)",
                }
            },
        },
        "security": [{"bearer": []}],
    }


def _generic(route: Route) -> Operation:
    return Operation(
        summary=f"{route.method} {route.path} (not documented yet)",
        tag="undocumented",
        body=None,
        answer=None,
    )


def _operation(route: Route, op: Operation, components: Components, error: Schema) -> Schema:
    doc: dict[str, Any] = {
        "operationId": route.endpoint.replace(".", "_"),
        "summary": op.summary,
        "tags": [op.tag],
    }
    description = _operation_description(op)
    if description:
        doc["description"] = description
    parameters = [_path_param(name) for name in route.parameters]
    if op.query is not None:
        parameters += query_parameters(op.query, components)
    headers = op.headers
    if op.permission and WORKSPACE_HEADER not in headers:
        headers = (*headers, WORKSPACE_HEADER)
    parameters += [_header(h) for h in headers]
    if parameters:
        doc["parameters"] = parameters
    body = _request_body(op, components)
    if body is not None:
        doc["requestBody"] = body
    doc["responses"] = _responses(op, route, components, error)
    if op.public:
        doc["security"] = []
    return doc


def _operation_description(op: Operation) -> str:
    parts = [op.description] if op.description else []
    if op.permission:
        parts.append(f"Needs the `{op.permission}` permission (a role that has it).")
    return " ".join(parts)


def _path_param(name: str) -> Schema:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _header(header: Header) -> Schema:
    schema: Schema = {"type": "string"}
    if header.values:
        schema["enum"] = list(header.values)
    return {
        "name": header.name,
        "in": "header",
        "required": header.required,
        "schema": schema,
        "description": header.description,
    }


def _request_body(op: Operation, components: Components) -> Schema | None:
    if op.body is None or op.body is UNDECLARED:
        return None
    content = _content(op.body, components)
    return {"required": op.body_required, "content": content}


def _content(declared: Any, components: Components) -> dict[str, Schema]:
    """The `content` map of a body: a type is JSON; `Content`s name their media."""
    entries = declared if isinstance(declared, tuple) else (declared,)
    content: dict[str, Schema] = {}
    for entry in entries:
        if isinstance(entry, Content):
            content[entry.media_type] = _media(entry, components)
        else:
            content["application/json"] = {"schema": schema_of(entry, components)}
    return content


def _media(entry: Content, components: Components) -> Schema:
    if entry.media_type == "text/event-stream":
        media: Schema = {
            "schema": {
                "type": "string",
                "description": entry.description or "Server-sent events: `data: <event>`",
            }
        }
        if entry.shape is not None:
            media["x-event-schema"] = schema_of(entry.shape, components)
        return media
    schema = {"type": "string"} if entry.shape is None else schema_of(entry.shape, components)
    if entry.description:
        schema = schema | {"description": entry.description}
    return {"schema": schema}


def _responses(op: Operation, route: Route, components: Components, error: Schema) -> Schema:
    success: Schema = {"description": SUCCESS_TEXT.get(op.status, "Success")}
    if op.answer is not None and op.answer is not UNDECLARED:
        success["content"] = _content(op.answer, components)
    responses: dict[str, Any] = {str(op.status): success}
    for status, codes in sorted(_error_codes(op, route).items()):
        text = STATUS_TEXT.get(status, "Error")
        answer: Schema = {"description": text, "content": {"application/json": {"schema": error}}}
        if codes:
            answer["description"] = text + ": " + ", ".join(f"`{code}`" for code in codes)
            answer["x-error-codes"] = list(codes)  # what the schemathesis run holds it to
        responses[str(status)] = answer
    return responses


def _error_codes(op: Operation, route: Route) -> dict[int, tuple[str, ...]]:
    """The error codes a route can answer, by status: the generic ones its declaration
    implies (authentication, a body or a query read) and those it declares."""
    found: dict[int, tuple[str, ...]] = {500: ("internal_error",)}
    implied: list[Mapping[int, tuple[str, ...]]] = []
    if not op.public:
        implied.append(AUTHENTICATED)
    if op.body not in (None, UNDECLARED) and route.method in BODY_METHODS:
        implied += [READS_BODY, BODY_SIZE]
    if op.query is not None:
        implied.append(READS_QUERY)
    if op.permission:
        implied.append(IN_A_WORKSPACE)
    declared = {s: (c,) if isinstance(c, str) else tuple(c) for s, c in op.errors.items()}
    for table in (*implied, declared):
        for status, codes in table.items():
            found[status] = tuple(dict.fromkeys((*found.get(status, ()), *codes)))
    return found


def _description() -> str:
    """A short opening for the viewer: the choices where the interface spec is silent
    live in docs/decisions.md (they once opened the page as a 37 KB table)."""
    return (
        "One HTTP service in front of several AI providers: the chat-completions protocol "
        "plus routing, fallbacks, limits, cost, energy and carbon metadata, and a "
        "management API. Every error answers with the envelope "
        "`{error: {message, type, code, doc_url}}`; `doc_url` points at the code's entry on "
        "/docs/pages/errors. Choices where the interface spec is silent: docs/decisions.md "
        "(/docs/pages/decisions)."
    )


def schema_names(document: Mapping[str, Any]) -> set[str]:
    return set(document.get("components", {}).get("schemas", {}))
