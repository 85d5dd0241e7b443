"""POST /v1/ocr (spec: OCR). Thin: everything happens in `gateway.ocr.service`."""

from __future__ import annotations

from quart import Blueprint, Response

from gateway.kernels.uploads.request import upload_request
from gateway.ocr.input import OcrParts
from gateway.ocr.render import OcrAnswer
from gateway.ocr.service import serve_ocr
from gateway.ocr.services import OcrServices
from gateway.platform.apidoc import Content, operation
from gateway.platform.web import json_response
from gateway.upstream.refusals import ENGINE, merged

# The spec's OCR codes have no 415: a type OCR does not read is 400 `invalid_file_type`.
OCR_ERRORS = merged(
    ENGINE,
    {
        400: ("invalid_file_type", "invalid_file", "file_type_mismatch", "invalid_pages"),
        413: "file_too_large",
        422: "ocr_failed",
    },
)


def ocr_blueprint(ocr: OcrServices) -> Blueprint:
    bp = Blueprint("ocr", __name__)

    @bp.post("/v1/ocr", endpoint="ocr")  # the OpenAPI operation's name
    @operation(
        "Read the text, tables and forms of a document or image (multipart)",
        "ocr",
        body=Content("multipart/form-data", OcrParts),
        answer=OcrAnswer,
        errors=OCR_ERRORS,
        description="Mistral's OCR through the engine when it is configured, else (or after "
        "its failure) the local engine. 422 `ocr_failed` when no text could be read.",
    )
    async def read() -> Response:
        up = await upload_request(ocr.auth)
        body = await serve_ocr(ocr, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)

    return bp
