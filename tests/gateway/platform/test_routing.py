"""A path that a route names literally belongs to that route alone (issue 31 point 13).

`/v1/files/search`, `/v1/management/providers/health` and
`/v1/management/routing-rules/test` sit beside a route with a parameter at the same place
(`/v1/files/{file_id}`...). Their `Allow` headers listed the sibling's methods too, and a
sibling's method on them looked up an object named "search" or "health". Each path's
methods are the ones the OpenAPI document lists for it, no more.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from tests.operator.test_openapi import fetch_document

IMPLICIT = {"HEAD", "OPTIONS"}
LITERAL_BESIDE_A_PARAMETER = {
    "/v1/files/search": {"POST"},
    "/v1/management/providers/health": {"GET"},
    "/v1/management/routing-rules/test": {"POST"},
}


def allowed(response: httpx.Response) -> set[str]:
    return {m.strip() for m in response.headers["allow"].split(",")} - IMPLICIT


@pytest.mark.parametrize(("path", "methods"), LITERAL_BESIDE_A_PARAMETER.items())
async def test_a_literal_path_allows_only_its_own_methods(
    http: httpx.AsyncClient, path: str, methods: set[str]
) -> None:
    options = await http.options(path)
    assert options.status_code == 200
    assert allowed(options) == methods
    for method in {"GET", "PATCH", "DELETE"} - methods:  # the sibling's methods
        refused = await http.request(method, path)
        assert refused.status_code == 405, (method, refused.text)
        assert refused.json()["error"]["code"] == "method_not_allowed"
        assert allowed(refused) == methods


async def test_every_path_allows_what_the_document_lists(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """`OPTIONS` on each literal path of the document names the document's methods; a
    path with parameters is asked with a made-up id."""
    document: dict[str, Any] = await fetch_document(gateway)
    wrong = {}
    for path, operations in document["paths"].items():
        concrete = path.replace("{", "x").replace("}", "")
        if path.startswith("/docs/{"):
            continue  # `/docs/{asset}` is a file path: any name is an asset
        if "101" in operations.get("get", {}).get("responses", {}):
            continue  # a WebSocket route: below
        answer = await http.options(concrete)
        documented = {method.upper() for method in operations}
        if answer.status_code != 200 or allowed(answer) != documented:
            wrong[path] = (answer.status_code, answer.headers.get("allow"), sorted(documented))
    assert wrong == {}


@pytest.mark.parametrize("path", ["/v1/realtime", "/v1/audio/sessions"])
async def test_a_websocket_route_asked_over_plain_http_answers_upgrade_required(
    http: httpx.AsyncClient, path: str
) -> None:
    for method in ("GET", "OPTIONS"):
        answer = await http.request(method, path)
        assert answer.status_code == 426, (method, answer.text)
        assert answer.headers["upgrade"] == "websocket"
        assert answer.json()["error"]["code"] == "upgrade_required"


async def test_a_websocket_route_beside_an_http_route_answers_upgrade_required(
    http: httpx.AsyncClient,
) -> None:
    """`/v1/responses` is a POST and a WebSocket: a plain GET is the WebSocket mode asked
    without its upgrade (a 426), not a method the path lacks (Werkzeug's 405 said only
    POST was allowed, while the document lists GET)."""
    answer = await http.get("/v1/responses")
    assert answer.status_code == 426, answer.text
    assert answer.headers["upgrade"] == "websocket"
    assert answer.json()["error"]["code"] == "upgrade_required"
    refused = await http.delete("/v1/responses")
    assert refused.status_code == 405
    assert allowed(refused) == {"GET", "POST"}
