"""POST /v1/ocr (spec: OCR). Thin: everything happens in `gateway.ocr.service`."""

from __future__ import annotations

from quart import Blueprint, Response

from gateway.kernels.uploads.request import upload_request
from gateway.ocr.service import serve_ocr
from gateway.ocr.services import OcrServices
from gateway.platform.web import json_response


def ocr_blueprint(ocr: OcrServices) -> Blueprint:
    bp = Blueprint("ocr", __name__)

    @bp.post("/v1/ocr", endpoint="ocr")  # the OpenAPI operation's name
    async def read() -> Response:
        up = await upload_request(ocr.auth)
        body = await serve_ocr(ocr, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)

    return bp
