"""The files endpoints (spec: Files). Thin: everything happens in `gateway.files.service`.

Each route declares its operation (`gateway.platform.apidoc`): the types it reads
(`gateway.files.input`) and answers (`gateway.files.render`), and the error codes it can
answer. Another workspace's file answers 404 exactly like an unknown id.
"""

from __future__ import annotations

from quart import Blueprint, Response, request, send_file

from gateway.files import render, search, service
from gateway.files.input import ChunksQuery, FilesQuery, MetadataChange, UploadParts
from gateway.files.services import FilesServices
from gateway.kernels.uploads.request import upload_request
from gateway.platform.apidoc import Content, operation
from gateway.platform.web import json_response, read_object
from gateway.upstream.refusals import AGENT_LIMITS, KEY_LIMITS, PROVIDERS, merged

TAG = "files"
NO_FILE = {404: "file_not_found"}
UPLOAD_ERRORS = merged(
    AGENT_LIMITS,  # an agent's upload passes its agent's limits (`agent_admission`)
    {
        400: ("invalid_file_type", "invalid_file", "file_type_mismatch", "invalid_chunking"),
        413: "file_too_large",
        415: ("unsupported_media_type", "unsupported_file_type"),
        422: "invalid_model",
        501: "feature_not_installed",
        507: "storage_quota_exceeded",
    },
)
# The query is embedded through the embeddings service in the caller's name: its limits
# and its providers' failures are the search's answers.
SEARCH_ERRORS = merged(KEY_LIMITS, AGENT_LIMITS, PROVIDERS, {502: "embedding_failed"})


def files_blueprint(services: FilesServices) -> Blueprint:
    bp = Blueprint("files", __name__)
    _upload_route(bp, services)
    _finding_routes(bp, services)
    _file_routes(bp, services)
    _held_routes(bp, services)
    return bp


def _upload_route(bp: Blueprint, services: FilesServices) -> None:
    @bp.post("/v1/files")
    @operation(
        "Upload a file (multipart), optionally queued for processing",
        TAG,
        body=Content("multipart/form-data", UploadParts),
        answer=render.File,
        errors=UPLOAD_ERRORS,
        description="Any of `process`, `vectorize`, `detect_pii`, `auto_transcribe` or "
        "`ocr_model` queues the file, and the answer's `service` names the process. The "
        "file streams to storage while the size table is enforced.",
    )
    async def upload() -> Response:
        up = await upload_request(services.auth, media_type_status=415)
        body = await service.upload(services, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)


def _finding_routes(bp: Blueprint, services: FilesServices) -> None:
    """Finding files: by meaning, and listed by metadata."""

    @bp.post("/v1/files/search")
    @operation(
        "Nearest chunks of the workspace's vectorized files (beyond the spec)",
        TAG,
        body=search.FileSearch,
        answer=search.FileHits,
        errors=SEARCH_ERRORS,
        description="Cosine similarity through the in-memory vector index shared with data "
        "documents; the query is embedded by each model that embedded a wanted file.",
    )
    async def search_files() -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await search.search(services, principal, body))

    @bp.get("/v1/files")
    @operation(
        "The workspace's files, newest first by default",
        TAG,
        query=FilesQuery,
        answer=render.FileList,
        errors={404: ("file_not_found",)},
        description="`metadata.<key>=<value>` query parameters filter on metadata. An "
        "`after` that names no file is 404 `file_not_found`.",
    )
    async def list_files() -> Response:
        principal = await services.auth.caller()
        return json_response(await service.list_files(services, principal, request.args))


def _file_routes(bp: Blueprint, services: FilesServices) -> None:
    """One file's record: read, metadata replaced, deleted."""

    @bp.get("/v1/files/<file_id>")
    @operation("One file", TAG, answer=render.File, errors=NO_FILE)
    async def read(file_id: str) -> Response:
        principal = await services.auth.caller()
        record = await service.get_file(services, principal, file_id)
        return json_response(render.file_object(record))

    @bp.patch("/v1/files/<file_id>")
    @operation(
        "Replace a file's metadata",
        TAG,
        body=MetadataChange,
        answer=render.PatchedFile,
        errors=NO_FILE,
    )
    async def patch(file_id: str) -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await service.patch_metadata(services, principal, file_id, body))

    @bp.delete("/v1/files/<file_id>")
    @operation(
        "Delete a file and everything derived from it",
        TAG,
        answer=render.DeletedFile,
        errors=NO_FILE,
    )
    async def delete(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.delete_file(services, principal, file_id))


def _held_routes(bp: Blueprint, services: FilesServices) -> None:
    """What a file holds: its bytes, and what processing derived from them."""

    @bp.get("/v1/files/<file_id>/content")
    @operation(
        "The file's bytes, with the Content-Type of their format",
        TAG,
        answer=Content("*/*", description="The bytes as uploaded"),
        errors=NO_FILE,
    )
    async def content(file_id: str) -> Response:
        principal = await services.auth.caller()
        path, content_type, filename = await service.content(services, principal, file_id)
        response = await send_file(path, mimetype=content_type)
        response.headers["Content-Disposition"] = render.content_disposition(filename)
        return response

    @bp.get("/v1/files/<file_id>/status")
    @operation("The processing status record", TAG, answer=render.FileStatusRecord, errors=NO_FILE)
    async def status(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.status(services, principal, file_id))

    @bp.get("/v1/files/<file_id>/text")
    @operation("The extracted text, whole and by page", TAG, answer=render.FileText, errors=NO_FILE)
    async def text(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.text(services, principal, file_id))

    @bp.get("/v1/files/<file_id>/chunks")
    @operation(
        "The text's chunks, a page at a time",
        TAG,
        query=ChunksQuery,
        answer=render.FileChunks,
        errors=NO_FILE,
    )
    async def chunks(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.chunks(services, principal, file_id, request.args))

    @bp.get("/v1/files/<file_id>/pii")
    @operation("The personal data found in the text", TAG, answer=render.PiiReport, errors=NO_FILE)
    async def pii(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.pii(services, principal, file_id))
