"""The files endpoints (spec: Files). Thin: everything happens in `gateway.files.service`."""

from __future__ import annotations

from quart import Blueprint, Response, request, send_file

from gateway.api.uploading import upload_request
from gateway.files import render, search, service
from gateway.platform.state import AppState
from gateway.platform.web import json_response, read_object


def files_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("files", __name__)

    @bp.post("/v1/files")
    async def upload() -> Response:
        up = await upload_request(state, media_type_status=415)
        body = await service.upload(state, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)

    @bp.post("/v1/files/search")
    async def search_files() -> Response:
        principal = await state.auth.caller()
        body = await read_object()
        return json_response(await search.search(state, principal, body))

    @bp.get("/v1/files")
    async def list_files() -> Response:
        principal = await state.auth.caller()
        return json_response(await service.list_files(state, principal, request.args))

    @bp.get("/v1/files/<file_id>")
    async def read(file_id: str) -> Response:
        principal = await state.auth.caller()
        record = await service.get_file(state, principal, file_id)
        return json_response(render.file_object(record))

    @bp.patch("/v1/files/<file_id>")
    async def patch(file_id: str) -> Response:
        principal = await state.auth.caller()
        body = await read_object()
        return json_response(await service.patch_metadata(state, principal, file_id, body))

    @bp.delete("/v1/files/<file_id>")
    async def delete(file_id: str) -> Response:
        principal = await state.auth.caller()
        return json_response(await service.delete_file(state, principal, file_id))

    @bp.get("/v1/files/<file_id>/content")
    async def content(file_id: str) -> Response:
        principal = await state.auth.caller()
        path, content_type, filename = await service.content(state, principal, file_id)
        response = await send_file(path, mimetype=content_type)
        response.headers["Content-Disposition"] = render.content_disposition(filename)
        return response

    @bp.get("/v1/files/<file_id>/status")
    async def status(file_id: str) -> Response:
        principal = await state.auth.caller()
        return json_response(await service.status(state, principal, file_id))

    @bp.get("/v1/files/<file_id>/text")
    async def text(file_id: str) -> Response:
        principal = await state.auth.caller()
        return json_response(await service.text(state, principal, file_id))

    @bp.get("/v1/files/<file_id>/chunks")
    async def chunks(file_id: str) -> Response:
        principal = await state.auth.caller()
        return json_response(await service.chunks(state, principal, file_id, request.args))

    @bp.get("/v1/files/<file_id>/pii")
    async def pii(file_id: str) -> Response:
        principal = await state.auth.caller()
        return json_response(await service.pii(state, principal, file_id))

    return bp
