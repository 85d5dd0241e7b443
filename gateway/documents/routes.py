"""The data-document endpoints (spec: Data documents) and POST /v1/data/search.
Thin: everything happens in `gateway.documents`."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.documents import render, search, service
from gateway.documents.services import DocumentsServices
from gateway.kernels.uploads.request import upload_request
from gateway.platform.audit import audit_event
from gateway.platform.web import json_response, read_object


def documents_blueprint(services: DocumentsServices) -> Blueprint:
    bp = Blueprint("documents", __name__)

    @bp.post("/v1/data/documents")
    async def upload() -> Response:
        up = await upload_request(services.auth)
        return json_response(await service.upload(services, up.principal, up.chunks, up.boundary))

    @bp.get("/v1/data/documents")
    async def list_documents() -> Response:
        principal = await services.auth.caller()
        return json_response(await service.list_documents(services, principal, request.args))

    @bp.get("/v1/data/documents/<document_id>")
    async def read(document_id: str) -> Response:
        principal = await services.auth.caller()
        record = await service.get_document(services, principal, document_id)
        return json_response(render.document(record))

    @bp.get("/v1/data/documents/<document_id>/chunks")
    async def chunks(document_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.chunks(services, principal, document_id, request.args))

    @bp.delete("/v1/data/documents/<document_id>")
    async def delete(document_id: str) -> Response:
        principal = await services.auth.caller()
        event = audit_event(
            principal,
            "data_document.erased",
            target_type="data_document",
            target_id=document_id,
            details={"reason": "request"},
        )
        return json_response(await service.delete(services, principal, document_id, event))

    @bp.post("/v1/data/search")
    async def search_documents() -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await search.search(services, principal, body))

    return bp
