"""docs/api-reference.md is the OpenAPI document the gateway serves, rendered by
`gateway.app.reference`: regenerated, never edited by hand. When a route or schema
changes, this test fails until `python -m gateway.app.reference` is run again."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.app import reference
from gateway.app.server import RunningGateway


async def test_the_committed_reference_is_the_served_document_rendered(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
    rendered = reference.render(document)
    committed = reference.PAGE.read_text()
    assert rendered == committed, (
        "docs/api-reference.md is stale: run `python -m gateway.app.reference`"
    )
    for path, item in document["paths"].items():
        for method in item:
            assert f"### `{method.upper()} {path}`" in committed


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "T", "version": "9.9", "description": "What it is."},
    "paths": {
        "/v1/things/{thing_id}": {
            "get": {
                "tags": ["things"],
                "summary": "Read a thing",
                "parameters": [
                    {
                        "name": "thing_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "Success",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    },
                    "404": {"description": "No such thing", "content": {}},
                },
            }
        },
        "/health": {
            "get": {"tags": ["health"], "summary": "Alive", "security": [], "responses": {}}
        },
    },
    "components": {
        "schemas": {
            "Thing": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "size": {"type": "integer", "minimum": 1, "maximum": 9},
                    "kind": {"enum": ["a", "b"]},
                    "parts": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                },
            }
        },
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    },
}


def test_the_page_says_what_the_document_says() -> None:
    page = reference.render(DOCUMENT)
    assert "(`GET /openapi.json`, T\n9.9)" in page
    assert page.index("## health") < page.index("## things")  # tags in order
    assert "### `GET /v1/things/{thing_id}`" in page
    assert "| `thing_id` | path | string | yes |  |" in page
    assert "`application/json`: [Thing](#thing)" in page
    assert "Errors ([envelope](#error)): 404." in page
    assert "| 404 | No such thing |" in page  # in the error statuses' table
    assert "Alive *Public: no key.*" in page
    assert "| `size` | integer (1 to 9) |  |  |" in page
    assert '| `kind` | `"a"` or `"b"` |  |  |' in page
    assert "| `parts[].name` | string |  |  |" in page
    assert "| `id` | string | yes |  |" in page
    assert "[GET `/v1/things/{thing_id}`](#get-v1thingsthing_id)" in page
