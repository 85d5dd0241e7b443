"""POST /v1/ocr (spec: OCR). Thin: everything happens in `gateway.ocr.service`."""

from __future__ import annotations

from quart import Blueprint, Response

from gateway.api.uploading import upload_request
from gateway.ocr.service import serve_ocr
from gateway.platform.state import AppState
from gateway.platform.web import json_response


def ocr_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("ocr", __name__)

    @bp.post("/v1/ocr")
    async def ocr() -> Response:
        up = await upload_request(state)
        body = await serve_ocr(state, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)

    return bp
