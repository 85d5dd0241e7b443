"""POST /v1/ocr (spec: OCR). Thin: everything happens in `gateway.ocr.service`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.ocr.service import serve_ocr
from gateway.platform.multipart import boundary_of
from gateway.platform.state import AppState
from gateway.platform.web import authenticate, json_response


def ocr_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("ocr", __name__)

    @bp.post("/v1/ocr")
    async def ocr() -> Response:
        principal = await authenticate(state)
        principal.require("files")
        boundary = boundary_of(request.headers.get("content-type"))
        headers = cast(Mapping[str, str], request.headers)
        body = await serve_ocr(state, principal, aiter(request.body), boundary, headers)
        return json_response(body)

    return bp
