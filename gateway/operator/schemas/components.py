"""Shared objects of the OpenAPI document (`#/components/schemas/...`)."""

from __future__ import annotations

from gateway.operator.apidoc import (
    STR,
    Schema,
    all_required,
    nullable,
    obj,
)

ERROR = all_required(
    error=obj(
        ("message", "type", "code"),
        message=STR,
        type=STR,
        code=nullable(STR),
        doc_url=STR,
        param=nullable(STR),
    ),
)

COMPONENTS: dict[str, Schema] = {
    "Error": ERROR,
}
