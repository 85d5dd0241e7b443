"""GET /openapi.json (the document, generated from the route table), GET /docs (Swagger
UI, served from the package; no CDN) and GET /docs/pages/<name> (the documentation pages,
where every error's `doc_url` points). None needs a key: the documents are public, and
"Authorize" in the viewer takes one for trying calls."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import trio
from quart import Blueprint, Response, current_app, send_file, send_from_directory

from gateway.operator import pages
from gateway.operator.openapi import app_routes, build_document
from gateway.platform.apidoc import Content, operation
from gateway.platform.errors import not_found
from gateway.platform.shapes import Format
from gateway.platform.web import json_response

TAG = "operator"
HTML = Content("text/html")

VIEWER = Path(__file__).resolve().parent.parent / "operator" / "static" / "swagger-ui"
VIEWER_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>AI gateway: API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/viewer.js"></script>
</body>
</html>
"""


class OpenApiDocument(TypedDict):
    """An OpenAPI 3.1 document (its parts as the OpenAPI specification defines them)."""

    openapi: Literal["3.1.0"]
    info: dict[str, Any]
    servers: list[dict[str, Any]]
    paths: dict[str, dict[str, Any]]
    components: dict[str, Any]
    security: list[dict[str, list[str]]]


def openapi_blueprint() -> Blueprint:
    bp = Blueprint("openapi", __name__)
    built: dict[str, Any] = {}

    @bp.get("/openapi.json")
    @operation("This document", TAG, answer=OpenApiDocument, public=True)
    async def document() -> Response:
        # Built on first use: by then every blueprint is registered.
        if not built:
            built.update(build_document(app_routes(current_app), version=_version()))
        return json_response(built)

    @bp.get("/docs")
    @operation(
        "The document rendered by Swagger UI (served from the package)",
        TAG,
        answer=HTML,
        public=True,
    )
    async def viewer() -> Response:
        return Response(VIEWER_PAGE, content_type="text/html; charset=utf-8")

    @bp.get("/docs/<path:asset>")
    @operation(
        "Swagger UI's files", TAG, answer=Content("*/*"), public=True, errors={404: "not_found"}
    )
    async def viewer_asset(asset: str) -> Response:
        return await send_from_directory(VIEWER, asset)

    library = pages.Library()
    rendering = trio.CapacityLimiter(1)

    @bp.get(pages.PREFIX)
    @operation(
        "The documentation's index page (docs/README.md, rendered to HTML)",
        TAG,
        answer=HTML,
        public=True,
    )
    async def docs_index() -> Response:
        return await _page(library, pages.INDEX, rendering)

    @bp.get(pages.PREFIX + "<name>")
    @operation(
        "One documentation page (docs/<name>.md rendered to HTML), or an image it shows",
        TAG,
        answer=(HTML, Content("image/png", Annotated[str, Format("binary")])),
        public=True,
        description="Every error's `doc_url` points at `/docs/pages/errors#<code>`. An image "
        "the pages show (`<name>.png`) is answered as `image/png`.",
        errors={404: "page_not_found"},
    )
    async def docs_page(name: str) -> Response:
        image = pages.image_file(name)
        if image is not None:
            return await send_file(image, mimetype="image/png")
        return await _page(library, name, rendering)

    return bp


async def _page(library: pages.Library, name: str, limiter: trio.CapacityLimiter) -> Response:
    """Page `name` as HTML. Read and rendered off the event loop (a long page takes tens of
    milliseconds), one at a time, once per version of its file."""
    page = await trio.to_thread.run_sync(library.page, name, limiter=limiter)
    if page is None:
        raise not_found("page_not_found", f"No documentation page '{name}'.", page=name)
    response = Response(page.html, content_type="text/html; charset=utf-8")
    response.headers["Content-Security-Policy"] = pages.CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _version() -> str:
    try:
        return metadata.version("ai-gateway")
    except metadata.PackageNotFoundError:
        return "0.0.0"
