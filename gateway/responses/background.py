"""Background responses as a client sees them (`background: true`): the create answered
at once, the turn run by chat's path in a task of its own, the events of a streamed one
read again from any point, the cancel.

The turn is chat's path with the Responses dialect, exactly as a create's (routing,
fallbacks, limits, the race, usage and cost), only its client is not waiting: the
answer is the response `queued`, read again with `GET` as it moves on
(`background_runs.TRANSITIONS`). A streamed one answers its events as a stream does,
from a log the run fills (`replay.EventLog`) rather than from the upstream: its client
leaving ends its reading, not the response. Its events are those of a stream, but
opened as the API opens a background one (`response.created` and `response.queued`,
the response `queued`) and numbered by the log.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway.kernels.dialects import Answered
from gateway.platform.auth import Principal
from gateway.platform.body import Answer, InlineBody, StreamAnswer
from gateway.platform.context import current_request_id
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.jsonio import JsonAnswer
from gateway.responses.background_runs import Run
from gateway.responses.dialect import ResponsesDialect
from gateway.responses.input import ResponsesRequest
from gateway.responses.render import response_object
from gateway.responses.replay import EventLog
from gateway.responses.services import ResponsesServices
from store.responses import StoredResponse

EVENT_STREAM = "text/event-stream"


def queued(request: ResponsesRequest) -> dict[str, Any]:
    """The response as the create answers it: `queued`, with the request's id."""
    answered = Answered(current_request_id(), int(time.time()), request.echo["model"], 0, _none)
    return response_object(request, answered, status="queued", output=[])


def _none(*_: Any) -> dict[str, Any]:
    return {}  # a queued response has no accounting to describe


async def create(
    responses: ResponsesServices,
    principal: Principal,
    record: StoredResponse,
    body: Any,
    headers: Mapping[str, str],
    history: Sequence[Mapping[str, Any]],
) -> Answer:
    """Start the run of `record` (the queued response) and answer it: the response, or
    (`stream`) its events from the first."""
    stream = bool(body.get("stream"))
    opening = None
    if stream:
        opening = [
            {"type": kind, "response": record.response}
            for kind in ("response.created", "response.queued")
        ]

    async def turn(run: Run) -> None:
        await _turn(responses, principal, body, dict(headers), history, run)

    run = await responses.background.start(record, turn, opening=opening)
    if run.log is None:
        return JsonAnswer(200, dict(run.response), {})
    return _events(run.log, -1)


async def _turn(
    responses: ResponsesServices,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    history: Sequence[Mapping[str, Any]],
    run: Run,
) -> None:
    """The turn itself, in the run's task: chat's path, its finished response settled
    into the run, a stream's events into its log."""
    runs = responses.background

    async def settle(response: dict[str, Any]) -> None:
        await runs.settle(run, response)

    dialect = ResponsesDialect(history, sse=False, on_final=settle)  # events as JSON lines
    async with responses.serve_chat(principal, body, headers, dialect) as answer:
        if isinstance(answer, JsonAnswer):
            await settle(answer.body)
            return
        assert run.log is not None, "a streamed turn has a log"
        async with answer.body.open() as frames:
            async for frame in frames:
                _relay(run.log, frame)


def _relay(log: EventLog, frame: bytes) -> None:
    """A frame's events into the log; the stream's own `response.created` is left out
    (the log opened with the queued one)."""
    for line in frame.splitlines():
        if line:
            event = orjson.loads(line)
            if event["type"] != "response.created":
                log.add(event)


def _events(log: EventLog, after: int) -> StreamAnswer:
    """The log's events after `after`, then the rest as they come; the reader's leaving
    ends only its reading."""
    log.check(after)
    return StreamAnswer(InlineBody(log.follow(after), content_type=EVENT_STREAM), {})


def replay(
    responses: ResponsesServices, principal: Principal, response_id: str, after: int | None
) -> StreamAnswer | None:
    """`GET /v1/responses/{id}?stream=true`: the events of a streamed background response
    after `starting_after`; None when this process has none of that id."""
    run = responses.background.get(principal.workspace_id, response_id)
    if run is None:
        return None
    if run.log is None:
        raise not_streamed()
    return _events(run.log, -1 if after is None else after)


def check_finished(responses: ResponsesServices, workspace_id: str, previous: str) -> None:
    """A 400 when `previous_response_id` names a background response still running: its
    output is not there yet to continue."""
    run = responses.background.get(workspace_id, previous)
    if run is not None and not run.finished:
        raise invalid_request(
            f"The previous response '{previous}' is still {run.status}; continue it once it "
            "has finished.",
            param="previous_response_id",
            value=previous,
        )


def not_streamed() -> ApiError:
    return invalid_request(
        "Only a background response created with 'stream': true can be streamed again "
        "(until 10 minutes after it finished); retrieve it without 'stream'.",
        param="stream",
    )


async def cancel(
    responses: ResponsesServices, principal: Principal, response_id: str
) -> dict[str, Any] | None:
    """`POST /v1/responses/{id}/cancel` of a run of this process: the response, cancelled
    (at once, its upstream call with it; again: the same); a 400 when it had finished.
    None when this process has no run of that id."""
    run = responses.background.get(principal.workspace_id, response_id)
    if run is None:
        return None
    if not await responses.background.cancel(run):
        raise not_cancellable(response_id, f"it has finished ({run.status})")
    return dict(run.response)


def cancelled_before(stored: StoredResponse) -> bool:
    """A stored response cancelled earlier (its run gone): cancelling it again answers it."""
    response = stored.response
    return bool(response.get("background")) and response.get("status") == "cancelled"


def not_cancellable(response_id: str, why: str) -> ApiError:
    return ApiError(
        400,
        "response_not_cancellable",
        f"Cannot cancel the response '{response_id}': only a queued or in-progress "
        f"response created with 'background': true can be cancelled, and {why}.",
        type="invalid_request_error",
        param="response_id",
    )
