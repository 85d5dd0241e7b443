"""The data-document endpoints (spec: Data documents) and POST /v1/data/search.
Thin: everything happens in `gateway.documents`.

Each route declares its operation (`gateway.platform.apidoc`): the types it reads
(`gateway.documents.input`, `search_input`) and answers (`render`, `search`). Another
workspace's document, or one of a classification the caller may not read, answers 404
exactly like an unknown id."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.documents import render, search, service
from gateway.documents.input import ChunksQuery, DocumentParts, DocumentsQuery
from gateway.documents.search_input import DocumentSearch
from gateway.documents.services import DocumentsServices
from gateway.kernels.uploads.request import upload_request
from gateway.platform.apidoc import Content, operation
from gateway.platform.audit import audit_event
from gateway.platform.web import json_response, read_object
from gateway.upstream.refusals import ENGINE, merged

TAG = "data documents"
NO_DOCUMENT = {404: "document_not_found"}
# The spec's size table gives 413; a type outside it is 400 (no 415 for data documents).
UPLOAD_ERRORS = {
    400: ("invalid_file_type", "invalid_file", "file_type_mismatch"),
    413: "file_too_large",
}
# The query's embedding fails as 502 `embedding_failed`; `rerank` goes through the rerank
# service in the caller's name, with its limits, its model and its providers.
SEARCH_ERRORS = merged(ENGINE, {502: "embedding_failed"})


def documents_blueprint(services: DocumentsServices) -> Blueprint:
    bp = Blueprint("documents", __name__)
    _collection_routes(bp, services)
    _document_routes(bp, services)
    _search_route(bp, services)
    return bp


def _collection_routes(bp: Blueprint, services: DocumentsServices) -> None:
    """The workspace's data documents: one added, all listed."""

    @bp.post("/v1/data/documents")
    @operation(
        "Upload a data document (multipart) for chunking, embedding and search",
        TAG,
        body=Content("multipart/form-data", DocumentParts),
        answer=render.DataDocument,
        errors=UPLOAD_ERRORS,
        description="Answers the document `pending`; processing moves it to `completed` or "
        "`failed`. Only a provider of `residency_region` embeds it. A classification the "
        "caller may not read (`phi`, `privileged` need an owner or admin) is 403.",
    )
    async def upload() -> Response:
        up = await upload_request(services.auth)
        return json_response(await service.upload(services, up.principal, up.chunks, up.boundary))

    @bp.get("/v1/data/documents")
    @operation(
        "The workspace's data documents, newest first",
        TAG,
        query=DocumentsQuery,
        answer=render.DocumentList,
    )
    async def list_documents() -> Response:
        principal = await services.auth.caller()
        return json_response(await service.list_documents(services, principal, request.args))


def _document_routes(bp: Blueprint, services: DocumentsServices) -> None:
    """One data document: read, its chunks, erased."""

    @bp.get("/v1/data/documents/<document_id>")
    @operation("One data document", TAG, answer=render.DataDocument, errors=NO_DOCUMENT)
    async def read(document_id: str) -> Response:
        principal = await services.auth.caller()
        record = await service.get_document(services, principal, document_id)
        return json_response(render.document(record))

    @bp.get("/v1/data/documents/<document_id>/chunks")
    @operation(
        "A window of the document's chunks",
        TAG,
        query=ChunksQuery,
        answer=render.DocumentChunks,
        errors=NO_DOCUMENT | {422: "processing_failed"},
        description="422 `processing_failed` for a document whose processing failed.",
    )
    async def chunks(document_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.chunks(services, principal, document_id, request.args))

    @bp.delete("/v1/data/documents/<document_id>")
    @operation(
        "Erase the document, its chunks, vectors, index entries and bytes",
        TAG,
        answer=render.ErasedDocument,
        errors=NO_DOCUMENT,
    )
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


def _search_route(bp: Blueprint, services: DocumentsServices) -> None:
    @bp.post("/v1/data/search")
    @operation(
        "Hybrid search (vectors and BM25, fused) over the workspace's data documents",
        TAG,
        body=DocumentSearch,
        answer=search.SearchHits,
        errors=SEARCH_ERRORS,
        description="Beyond the spec. `rerank` reorders the best candidates through a rerank "
        "model (true: rerank-v3.5).",
    )
    async def search_documents() -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await search.search(services, principal, body))
