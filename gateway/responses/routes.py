"""The Responses API's routes: `POST /v1/responses` on the fast path (it streams), the
stored responses and the WebSocket mode (`GET /v1/responses` upgraded) on Quart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request, websocket

from gateway.platform.apidoc import Content, Operation, operation
from gateway.platform.asgi import Route
from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import parse_query
from gateway.platform.web import decode_json, json_response, stream_response
from gateway.responses import service, shapes
from gateway.responses.services import ResponsesServices
from gateway.responses.websocket import send_error, serve_socket
from gateway.upstream.refusals import CHAT_CALL, merged

RESPONSES_PATH = "/v1/responses"
TAG = "responses"
STORED_ERRORS = {404: "response_not_found"}
CREATE_OPERATION = Operation(
    summary="Create a response (OpenAI's Responses API over any chat vendor), streamed or not",
    tag=TAG,
    body=shapes.CreateResponse,
    answer=(shapes.ResponseObject, Content("text/event-stream", shapes.ResponseEvent)),
    errors=merged(
        CHAT_CALL,
        {
            400: ("invalid_tool_choice", "nothing_to_answer"),
            404: "previous_response_not_found",
        },
    ),
    description="With `stream: true`, server-sent events: `event: <type>` and `data: <event>` "
    "for each event of the response.",
)


def responses_routes(responses: ResponsesServices) -> list[Route]:
    def answer_responses(
        principal: Principal, body: bytes, headers: Mapping[str, str]
    ) -> Answering:
        if not body:
            raise invalid_request("The request body must be a JSON object.")
        return service.serve_create(responses, principal, decode_json(body), headers)

    return [Route("POST", RESPONSES_PATH, answer_responses, operation=CREATE_OPERATION)]


def responses_blueprint(responses: ResponsesServices) -> Blueprint:
    bp = Blueprint("responses", __name__)
    auth = responses.auth

    @bp.get(RESPONSES_PATH + "/<response_id>")
    @operation(
        "A stored response, as it is now; with `stream=true` a streamed background "
        "response's events after `starting_after`, then live",
        TAG,
        query=shapes.RetrieveQuery,
        answer=(shapes.ResponseObject, Content("text/event-stream", shapes.ResponseEvent)),
        errors={**STORED_ERRORS, 400: "invalid_request"},
    )
    async def retrieve(response_id: str) -> Response:
        principal = await auth.caller()
        query = parse_query(shapes.RetrieveQuery, request.args)
        if query.stream:
            after = query.starting_after
            answer = await service.retrieve_stream(responses, principal, response_id, after)
            return stream_response(answer)
        return json_response(await service.retrieve(responses, principal, response_id))

    @bp.delete(RESPONSES_PATH + "/<response_id>")
    @operation("Erase a stored response", TAG, answer=shapes.DeletedResponse, errors=STORED_ERRORS)
    async def delete(response_id: str) -> Response:
        principal = await auth.caller()
        return json_response(await service.delete(responses, principal, response_id))

    @bp.post(RESPONSES_PATH + "/<response_id>/cancel")
    @operation(
        "Cancel a queued or in-progress background response (again: the same answer)",
        TAG,
        body=None,
        answer=shapes.ResponseObject,
        errors={**STORED_ERRORS, 400: "response_not_cancellable"},
    )
    async def cancel(response_id: str) -> Response:
        principal = await auth.caller()
        return json_response(await service.cancel(responses, principal, response_id))

    @bp.get(RESPONSES_PATH + "/<response_id>/input_items")
    @operation(
        "The input items of a stored response's request",
        TAG,
        query=shapes.InputItemsQuery,
        answer=shapes.InputItemList,
        errors={**STORED_ERRORS, 400: "invalid_cursor"},
    )
    async def input_items(response_id: str) -> Response:
        principal = await auth.caller()
        parse_query(shapes.InputItemsQuery, request.args)  # the page's own checks follow
        query = cast(Mapping[str, str], request.args)
        return json_response(await service.input_items(responses, principal, response_id, query))

    @bp.websocket(RESPONSES_PATH)
    @operation(
        "The Responses API's WebSocket mode: upgrade, then `response.create` events",
        TAG,
        body=None,
        answer=None,
        status=101,
        errors={426: "upgrade_required"},
        description="Each `response.create` event (the create body's fields) is one turn, "
        "answered with the streamed events as JSON messages; turns run one at a time. A "
        "turn that cannot start gets one `error` event `{type, status, error}`. Without a "
        "valid key: an `error` event, then close code 4401.",
    )
    async def connect() -> None:
        """The WebSocket mode (`gateway.responses.websocket`). A caller without a valid
        key is accepted, told why in an `error` event and closed with code 4000 + the
        HTTP status (4401), as the voice sessions do."""
        try:
            principal = await auth.header(
                websocket.headers.get("authorization"), websocket.remote_addr
            )
        except ApiError as error:
            await websocket.accept()
            await send_error(_QuartSocket(), error)
            await websocket.close(4000 + error.status, error.code)
            return
        await websocket.accept()
        headers = cast(Mapping[str, str], websocket.headers)
        await serve_socket(responses, principal, headers, _QuartSocket())

    return bp


class _QuartSocket:
    """The request's WebSocket as the mode's `Socket` (a dropped connection cancels the
    handler, and with it the turn)."""

    async def receive(self) -> str | bytes:
        return await websocket.receive()

    async def send(self, data: str) -> None:
        await websocket.send(data)
