"""GET /openapi.json (the document, generated from the route table) and GET /docs (Swagger
UI, served from the package; no CDN). Neither needs a key: the document is public, and
"Authorize" in the viewer takes one for trying calls."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from quart import Blueprint, Response, current_app, send_from_directory

from gateway.operator.openapi import app_routes, build_document
from gateway.platform.web import json_response

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


def openapi_blueprint() -> Blueprint:
    bp = Blueprint("openapi", __name__)
    built: dict[str, Any] = {}

    @bp.get("/openapi.json")
    async def document() -> Response:
        # Built on first use: by then every blueprint is registered.
        if not built:
            built.update(build_document(app_routes(current_app), version=_version()))
        return json_response(built)

    @bp.get("/docs")
    async def viewer() -> Response:
        return Response(VIEWER_PAGE, content_type="text/html; charset=utf-8")

    @bp.get("/docs/<path:asset>")
    async def viewer_asset(asset: str) -> Response:
        return await send_from_directory(VIEWER, asset)

    return bp


def _version() -> str:
    try:
        return metadata.version("ai-gateway")
    except metadata.PackageNotFoundError:
        return "0.0.0"
