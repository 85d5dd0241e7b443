"""The OpenAPI 3.1 document, generated from the app's own route table.

Routes come from Quart's `url_map` and from the plain-ASGI fast path
(`fast_path_routes`); what each operation takes and answers comes from the registry in
`gateway.operator.schemas`, keyed by endpoint name. Nothing here lists paths by hand, so a
route added to a blueprint appears in the document at once: with its schemas if its family
registered an `Operation`, otherwise generically and named by `undocumented`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from gateway.operator.apidoc import Operation, Schema, ref
from gateway.operator.schemas import COMPONENTS, OPERATIONS

SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})
SKIPPED_ENDPOINTS = frozenset({"static"})  # Quart's default static route: no folder, no files
_PARAM = re.compile(r"<(?:[a-z]+:)?([A-Za-z_][A-Za-z0-9_]*)>")
STATUS_TEXT = {
    400: "Invalid request (the envelope's `code` says what)",
    401: "Missing or invalid API key",
    403: "The key lacks the permission",
    404: "Not found (also for another workspace's ids)",
    405: "Method not allowed",
    408: "The request body did not arrive in time",
    409: "Conflict with the current state",
    413: "Request body too large",
    410: "Gone: past its download window",
    415: "Unsupported media type",
    422: "Semantically invalid (credentials, models)",
    426: "Upgrade required: a WebSocket route asked without the upgrade",
    429: "A rate limit of the key was reached",
    500: "The gateway failed unexpectedly",
    502: "The provider answered with an error",
    503: "No provider could serve the request now",
    504: "The provider did not answer in time",
    507: "The workspace's storage quota would be exceeded",
}

SUCCESS_TEXT = {101: "Switching Protocols: the connection is a WebSocket from here on"}


@attrs.frozen
class Route:
    method: str
    path: str  # OpenAPI form: /v1/things/{thing_id}
    endpoint: str
    parameters: tuple[str, ...] = ()


def fast_path_routes(table: Iterable[tuple[str, str]]) -> list[Route]:
    """The routes the plain-ASGI fast path serves before Quart sees them (its route
    table, as (method, path), which the composition root puts in the app's config as
    `FAST_ROUTES`). Endpoint names follow the path: `POST /v1/chat/completions` is
    `fast.chat_completions`."""
    return [_fast_route(method, path) for method, path in table]


def _fast_route(method: str, raw: str) -> Route:
    path = _PARAM.sub(r"{\1}", raw)
    return Route(method, path, _fast_name(raw), tuple(_PARAM.findall(raw)))


def _fast_name(path: str) -> str:
    trimmed = path.removeprefix("/v1/").strip("/")
    return "fast." + re.sub(r"[^A-Za-z0-9]+", "_", _PARAM.sub(r"\1", trimmed))


def quart_routes(url_map: Any) -> list[Route]:
    """Every (method, rule) of Quart's route table, in OpenAPI path form."""
    found = []
    for rule in url_map.iter_rules():
        if rule.endpoint in SKIPPED_ENDPOINTS:
            continue
        path = _PARAM.sub(r"{\1}", rule.rule)
        params = tuple(_PARAM.findall(rule.rule))
        for method in sorted(set(rule.methods or ()) - SKIPPED_METHODS):
            found.append(Route(method, path, rule.endpoint, params))
    return found


def app_routes(app: Any) -> list[Route]:
    return [*fast_path_routes(app.config.get("FAST_ROUTES", ())), *quart_routes(app.url_map)]


def undocumented(routes: Iterable[Route]) -> list[Route]:
    """Routes the app serves without an `Operation` in the registry."""
    return [r for r in routes if r.endpoint not in OPERATIONS]


def build_document(routes: Iterable[Route], *, version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    ids: set[str] = set()
    for route in routes:
        operation = OPERATIONS.get(route.endpoint) or _generic(route)
        doc = _operation(route, operation)
        if doc["operationId"] in ids:  # one view for several methods (PATCH and PUT)
            doc["operationId"] += "_" + route.method.lower()
        ids.add(doc["operationId"])
        paths.setdefault(route.path, {})[route.method.lower()] = doc
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "AI gateway",
            "version": version,
            "description": _description(),
        },
        "servers": [{"url": "/"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": COMPONENTS,
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
        f"{route.method} {route.path} (not documented yet)",
        "undocumented",
        None,
        errors=(400, 401, 403, 404, 429),
    )


def _operation(route: Route, op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": route.endpoint.replace(".", "_"),
        "summary": op.summary,
        "tags": [op.tag],
        "responses": _responses(op),
    }
    if op.description:
        doc["description"] = op.description
    parameters = [_path_param(name) for name in route.parameters]
    parameters += [*op.query, *op.headers]
    if parameters:
        doc["parameters"] = parameters
    if op.request is not None:
        doc["requestBody"] = {
            "required": op.body_required,
            "content": {op.request_media_type: {"schema": op.request}},
        }
    if op.public:
        doc["security"] = []
    return doc


def _path_param(name: str) -> Schema:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _responses(op: Operation) -> dict[str, Any]:
    success: dict[str, Any] = {"description": SUCCESS_TEXT.get(op.status, "Success")}
    if op.response is not None:
        success["content"] = {op.media_type: {"schema": op.response}}
        if op.stream is not None:
            success["content"]["text/event-stream"] = {
                "schema": {
                    "type": "string",
                    "description": "With `stream: true`: `data: <chunk>` events, then "
                    "`data: [DONE]`",
                },
                "x-event-schema": op.stream,
            }
        for media_type, schema in op.alternatives:
            success["content"][media_type] = {"schema": schema}
    responses: dict[str, Any] = {str(op.status): success}
    for status in sorted({*op.errors, 500}):
        responses[str(status)] = {
            "description": STATUS_TEXT.get(status, "Error"),
            "content": {"application/json": {"schema": ref("Error")}},
        }
    return responses


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
