"""The hand-written operations of routes not yet declared on the route (transition only).

Each family moves its routes to declared operations (`gateway.platform.apidoc`); until
then, its old entry in `gateway.operator.schemas` is rendered as before. This module goes
with the last of them.
"""

from __future__ import annotations

from typing import Any

from gateway.operator.apidoc import Operation as LegacyOperation
from gateway.operator.apidoc import Schema, ref
from gateway.operator.schemas import COMPONENTS, OPERATIONS

__all__ = ["COMPONENTS", "OPERATIONS", "legacy_operation"]


def legacy_operation(
    route_path_params: tuple[str, ...],
    endpoint: str,
    op: LegacyOperation,
    status_text: dict[int, str],
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": endpoint.replace(".", "_"),
        "summary": op.summary,
        "tags": [op.tag],
        "responses": _responses(op, status_text),
    }
    if op.description:
        doc["description"] = op.description
    parameters: list[Schema] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route_path_params
    ]
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


def _responses(op: LegacyOperation, status_text: dict[int, str]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success"}
    if op.status == 101:
        success["description"] = "Switching Protocols: the connection is a WebSocket from here on"
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
            "description": status_text.get(status, "Error"),
            "content": {"application/json": {"schema": ref("Error")}},
        }
    return responses
