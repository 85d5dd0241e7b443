"""The files endpoints (spec: Files). Thin: everything happens in `gateway.files.service`."""

from __future__ import annotations

from quart import Blueprint, Response, request, send_file

from gateway.files import render, search, service
from gateway.files.services import FilesServices
from gateway.kernels.uploads.request import upload_request
from gateway.platform.web import json_response, read_object


def files_blueprint(services: FilesServices) -> Blueprint:
    bp = Blueprint("files", __name__)

    @bp.post("/v1/files")
    async def upload() -> Response:
        up = await upload_request(services.auth, media_type_status=415)
        body = await service.upload(services, up.principal, up.chunks, up.boundary, up.headers)
        return json_response(body)

    @bp.post("/v1/files/search")
    async def search_files() -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await search.search(services, principal, body))

    @bp.get("/v1/files")
    async def list_files() -> Response:
        principal = await services.auth.caller()
        return json_response(await service.list_files(services, principal, request.args))

    @bp.get("/v1/files/<file_id>")
    async def read(file_id: str) -> Response:
        principal = await services.auth.caller()
        record = await service.get_file(services, principal, file_id)
        return json_response(render.file_object(record))

    @bp.patch("/v1/files/<file_id>")
    async def patch(file_id: str) -> Response:
        principal = await services.auth.caller()
        body = await read_object()
        return json_response(await service.patch_metadata(services, principal, file_id, body))

    @bp.delete("/v1/files/<file_id>")
    async def delete(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.delete_file(services, principal, file_id))

    @bp.get("/v1/files/<file_id>/content")
    async def content(file_id: str) -> Response:
        principal = await services.auth.caller()
        path, content_type, filename = await service.content(services, principal, file_id)
        response = await send_file(path, mimetype=content_type)
        response.headers["Content-Disposition"] = render.content_disposition(filename)
        return response

    @bp.get("/v1/files/<file_id>/status")
    async def status(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.status(services, principal, file_id))

    @bp.get("/v1/files/<file_id>/text")
    async def text(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.text(services, principal, file_id))

    @bp.get("/v1/files/<file_id>/chunks")
    async def chunks(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.chunks(services, principal, file_id, request.args))

    @bp.get("/v1/files/<file_id>/pii")
    async def pii(file_id: str) -> Response:
        principal = await services.auth.caller()
        return json_response(await service.pii(services, principal, file_id))

    return bp
