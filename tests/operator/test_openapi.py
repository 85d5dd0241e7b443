"""GET /openapi.json and GET /docs: a valid document that matches the route table both ways."""

from __future__ import annotations

from typing import Any

import httpx
from openapi_spec_validator import validate
from quart import Blueprint
from quart_trio import QuartTrio

from gateway.app.factory import fast_path_rules
from gateway.app.server import RunningGateway
from gateway.operator.openapi import (
    app_routes,
    build_document,
    quart_routes,
    undocumented,
)
from gateway.platform.asgi import Route as FastRoute


async def fetch_document(gateway: RunningGateway) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        response = await anonymous.get("/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


async def test_the_document_is_valid_openapi(gateway: RunningGateway) -> None:
    document = await fetch_document(gateway)
    validate(document)  # raises on any violation of the OpenAPI 3.1 schema
    assert document["openapi"] == "3.1.0"
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    description = document["info"]["description"]
    assert "docs/decisions.md" in description and len(description) < 1000


async def test_every_served_route_is_documented_and_every_documented_route_served(
    gateway: RunningGateway,
) -> None:
    document = await fetch_document(gateway)
    served = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
    }
    assert ("POST", "/v1/chat/completions") in served
    assert ("GET", "/v1/management/api-keys/{key_id}") in served
    undocumented_ops = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if operation["tags"] == ["undocumented"]
    ]
    assert undocumented_ops == [], "routes that declare no Operation (gateway.platform.apidoc)"


async def test_every_operation_documents_errors_with_the_envelope(
    gateway: RunningGateway,
) -> None:
    document = await fetch_document(gateway)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            success = [code for code in responses if code.startswith("2") or code == "101"]
            assert success, (method, path)
            for code, answer in responses.items():
                if code[0] in "45":
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (method, path)
            public = operation.get("security") == []
            assert public or "401" in responses, (method, path)


async def test_the_voice_session_answers_switching_protocols(gateway: RunningGateway) -> None:
    document = await fetch_document(gateway)
    responses = document["paths"]["/v1/audio/sessions"]["get"]["responses"]
    assert responses["101"]["description"].startswith("Switching Protocols")
    assert not [code for code in responses if code.startswith("2")]
    assert "426" in responses


def test_the_fast_path_routes_are_rules_of_quart_named_after_their_paths() -> None:
    paths = ["/v1/chat/completions", "/v1/messages/count_tokens", "/v1/audio/speech"]
    app = QuartTrio(__name__)
    app.register_blueprint(fast_path_rules([FastRoute("POST", p, _never_called) for p in paths]))
    assert [(r.method, r.path, r.endpoint) for r in app_routes(app)] == [
        ("POST", "/v1/chat/completions", "fast.chat_completions"),
        ("POST", "/v1/messages/count_tokens", "fast.messages_count_tokens"),
        ("POST", "/v1/audio/speech", "fast.audio_speech"),
    ]


def _never_called(*_: object) -> Any:
    raise AssertionError("the document never calls a handler")


def test_a_new_route_without_a_schema_appears_generically_and_is_named() -> None:
    app = QuartTrio(__name__)
    bp = Blueprint("widgets", __name__)

    @bp.get("/v1/widgets/<widget_id>")
    async def read_widget(widget_id: str) -> str:
        return widget_id

    app.register_blueprint(bp)
    routes = app_routes(app)
    missing = undocumented(routes)
    assert [(r.method, r.path, r.endpoint) for r in missing] == [
        ("GET", "/v1/widgets/{widget_id}", "widgets.read_widget")
    ]
    document = build_document(routes, version="test")
    validate(document)
    operation = document["paths"]["/v1/widgets/{widget_id}"]["get"]
    assert operation["tags"] == ["undocumented"]
    assert operation["parameters"][0]["name"] == "widget_id"
    assert [r.path for r in quart_routes(app)] == ["/v1/widgets/{widget_id}"]


async def test_docs_viewer_is_served_from_the_package(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        page = await anonymous.get("/docs")
        bundle = await anonymous.get("/docs/swagger-ui-bundle.js")
        licence = await anonymous.get("/docs/LICENSE")
        escape = await anonymous.get("/docs/..%2F..%2Fplatform%2Fconfig.py")
        missing = await anonymous.get("/docs/nothing.js")
    assert page.status_code == 200
    assert 'src="/docs/swagger-ui-bundle.js"' in page.text
    assert "http" not in page.text.split("<body>")[1]  # nothing from another host
    assert bundle.status_code == 200
    assert "SwaggerUIBundle" in bundle.text[:200_000]
    assert "Apache License" in licence.text
    assert escape.status_code == 404
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
