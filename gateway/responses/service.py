"""Serving the Responses API: creating a response through chat's path, and the stored ones.

A create continues the stored conversation its `previous_response_id` names (another
workspace's id, or a deleted one, is a 404 like an unknown one), runs chat's path with the
Responses dialect, and stores the finished response when `store` is on (the API's
default): a whole answer before it is sent, a stream before its last event goes out (the
dialect's `seal`), so a client that continues the conversation at once finds it: kept in
memory at once and written behind (`store.responses.ResponseKeeper`), so no disk flush
stands between an answer and its client. A
stored response expires `responses_retention_days` after its creation (the retention
worker erases it) and is erased, not merely deleted, on `DELETE`.

A create with `background: true` is answered `queued` and run behind its answer
(`background`, `background_runs`); `GET`, `cancel` and `DELETE` see such a run as it is.

Orchestration only: reading is `input`, rendering `render`/`events`, storage
`store.responses`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs

from gateway.platform.auth import Principal
from gateway.platform.body import Answer, StreamAnswer
from gateway.platform.errors import ApiError, invalid_request, not_found
from gateway.platform.jsonio import JsonAnswer
from gateway.responses import background
from gateway.responses.dialect import ResponsesDialect
from gateway.responses.input import ResponsesRequest, parse_responses_body, previous_response_id
from gateway.responses.services import ResponsesServices
from gateway.upstream.facts import new_facts
from store import responses as response_store
from store.responses import BrokenChain, StoredResponse

DAY_S = 86_400
MAX_ITEMS_PAGE = 100


@attrs.define
class Memory:
    """A WebSocket connection's memory of its last response: its id and its whole
    conversation, so the next turn may continue it though it was not stored."""

    response_id: str | None = None
    items: list[dict[str, Any]] = attrs.field(factory=list)

    def history(self, previous: str | None) -> list[dict[str, Any]] | None:
        return list(self.items) if previous is not None and previous == self.response_id else None

    def remember(self, history: list[dict[str, Any]], dialect: ResponsesDialect) -> None:
        final = dialect.final
        if final is None or final.get("status") == "failed":
            self.response_id, self.items = None, []  # as the API: an error evicts it
            return
        self.response_id = final["id"]
        self.items = [*history, *dialect.request.input_items, *final.get("output", ())]


def serve_create(
    responses: ResponsesServices,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    *,
    sse: bool = True,
    memory: Memory | None = None,
) -> AbstractAsyncContextManager[Answer]:
    """`async with serve_create(...) as answer:` as chat's `serve_chat` (raises `ApiError`
    on entry). `sse` False frames a stream's events as JSON lines, and `memory` is the
    connection's last response (the WebSocket mode)."""
    return _create(responses, principal, body, headers, sse, memory)


@asynccontextmanager
async def _create(
    responses: ResponsesServices,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    sse: bool,
    memory: Memory | None,
) -> AsyncIterator[Answer]:
    principal.require("chat")
    history = await _history(responses, principal, body, headers, memory)
    if isinstance(body, dict) and body.get("background") is True:
        yield await _start_background(responses, principal, body, headers, history, sse)
        return

    async def stored(final: dict[str, Any]) -> None:
        await keep(responses, principal, dialect, final)
        if memory is not None:
            memory.remember(history, dialect)

    dialect = ResponsesDialect(history, sse=sse, on_final=stored)
    try:
        async with responses.serve_chat(principal, body, headers, dialect) as answer:
            if isinstance(answer, JsonAnswer):
                await stored(answer.body)
            yield answer
    except ApiError as error:  # chat's refusals name its messages: say the request's path
        dialect.name_in_request(error, body)
        raise


async def _history(
    responses: ResponsesServices,
    principal: Principal,
    body: Any,
    headers: Mapping[str, str],
    memory: Memory | None,
) -> list[dict[str, Any]]:
    """The conversation the request continues (none without `previous_response_id`): the
    connection's memory, else the store. A refusal here is recorded as chat's own are
    (a request continuing nothing costs no more than a chat completion)."""
    if not isinstance(body, dict) or body.get("previous_response_id") is None:
        return []  # chat's parser refuses (and records) a body that is not an object
    facts = new_facts("chat", principal, headers)
    with responses.usage.rejecting(facts, lambda: body.get("model")):
        previous = previous_response_id(body)
        remembered = memory.history(previous) if memory is not None else None
        if remembered is not None:
            return remembered
        if previous is None:
            return []
        workspace = principal.workspace_id
        background.check_finished(responses, workspace, previous)
        try:
            return await responses.keeper.conversation(workspace, previous)
        except BrokenChain as broken:
            raise _previous_not_found(previous, broken.response_id) from None


async def _start_background(
    responses: ResponsesServices,
    principal: Principal,
    body: dict[str, Any],
    headers: Mapping[str, str],
    history: list[dict[str, Any]],
    sse: bool,
) -> Answer:
    """`background: true`: the request's 400s now (recorded as chat's are), then the
    response `queued`, run behind the answer (`gateway.responses.background`)."""
    facts = new_facts("chat", principal, headers)
    with responses.usage.rejecting(facts, lambda: body.get("model")):
        if not sse:
            raise invalid_request(
                "'background' is not supported in WebSocket mode.", param="background"
            )
        request = parse_responses_body(body, history)
    record = stored_record(responses, principal, request, background.queued(request))
    return await background.create(responses, principal, record, body, headers, history)


def _previous_not_found(previous: str, missing: str) -> ApiError:
    detail = "" if missing == previous else f" (its earlier response '{missing}' is gone)"
    return ApiError(
        404,
        "previous_response_not_found",
        f"Previous response with id '{previous}' not found{detail}.",
        type="invalid_request_error",
        param="previous_response_id",
    )


async def keep(
    responses: ResponsesServices,
    principal: Principal,
    dialect: ResponsesDialect,
    final: dict[str, Any],
) -> None:
    """Store the finished response when its request asked for it."""
    if dialect.request.store:
        await responses.keeper.keep(stored_record(responses, principal, dialect.request, final))


def stored_record(
    responses: ResponsesServices,
    principal: Principal,
    request: ResponsesRequest,
    response: dict[str, Any],
) -> StoredResponse:
    """`response` to its request as the store keeps it, expiring with the retention."""
    days = responses.retention_days
    created = int(response["created_at"])
    return StoredResponse(
        id=response["id"],
        workspace_id=principal.workspace_id,
        key_id=principal.key_id,
        previous_response_id=request.previous_response_id,
        created_at=created,
        expires_at=created + int(days * DAY_S) if days > 0 else None,
        input_items=request.input_items,
        response=response,
    )


# -- the stored responses ------------------------------------------------------------------


async def retrieve(
    responses: ResponsesServices, principal: Principal, response_id: str
) -> dict[str, Any]:
    """A response as it is now: a background one of this process from its run."""
    principal.require("chat")
    run = responses.background.get(principal.workspace_id, response_id)
    if run is not None:
        return dict(run.response)
    return dict((await _stored(responses, principal, response_id)).response)


async def retrieve_stream(
    responses: ResponsesServices, principal: Principal, response_id: str, after: int | None
) -> StreamAnswer:
    """`GET ...?stream=true`: a streamed background response's events after `after`."""
    principal.require("chat")
    answer = background.replay(responses, principal, response_id, after)
    if answer is None:
        await _stored(responses, principal, response_id)  # else a 404
        raise background.not_streamed()
    return answer


async def delete(
    responses: ResponsesServices, principal: Principal, response_id: str
) -> dict[str, Any]:
    """Erase a response; a background one still running is cancelled first."""
    principal.require("chat")
    run = responses.background.get(principal.workspace_id, response_id)
    if run is not None:
        await responses.background.cancel(run)
        responses.background.forget(run)
    erased = await response_store.erase_one(
        responses.db, responses.keeper, principal.workspace_id, response_id
    )
    if not erased:
        raise _not_found(response_id)
    return {"id": response_id, "object": "response", "deleted": True}


async def cancel(
    responses: ResponsesServices, principal: Principal, response_id: str
) -> dict[str, Any]:
    """`POST /v1/responses/{id}/cancel`: a queued or in-progress background response is
    cancelled (a cancelled one answered again); any other is a 400, an unknown one a 404."""
    principal.require("chat")
    cancelled = await background.cancel(responses, principal, response_id)
    if cancelled is not None:
        return cancelled
    stored = await _stored(responses, principal, response_id)
    if background.cancelled_before(stored):
        return dict(stored.response)
    why = "it has finished" if stored.response.get("background") else "this one was not"
    raise background.not_cancellable(response_id, why)


async def input_items(
    responses: ResponsesServices, principal: Principal, response_id: str, query: Mapping[str, str]
) -> dict[str, Any]:
    """`GET /v1/responses/{id}/input_items`: the request's input items as a list page
    (`limit` 1-100, `order` desc by default, `after`/`before` an item id)."""
    principal.require("chat")
    stored = await _stored(responses, principal, response_id)
    limit, order = _limit(query.get("limit")), query.get("order") or "desc"
    if order not in ("asc", "desc"):
        raise invalid_request("'order' must be 'asc' or 'desc'.", param="order", value=order)
    items = [dict(item) for item in stored.input_items]
    if order == "desc":
        items.reverse()
    items = _after(items, query.get("after"), "after")
    items = _before(items, query.get("before"))
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


def _limit(value: str | None) -> int:
    if value is None:
        return 20
    if not value.isdigit() or not 1 <= int(value) <= MAX_ITEMS_PAGE:
        raise invalid_request(
            f"'limit' must be an integer from 1 to {MAX_ITEMS_PAGE}.", param="limit", value=value
        )
    return int(value)


def _after(items: list[dict[str, Any]], cursor: str | None, name: str) -> list[dict[str, Any]]:
    if cursor is None:
        return items
    ids = [item["id"] for item in items]
    if cursor not in ids:
        raise ApiError(
            400, "invalid_cursor", f"'{name}' names no item of this list.", param=name, value=cursor
        )
    return items[ids.index(cursor) + 1 :]


def _before(items: list[dict[str, Any]], cursor: str | None) -> list[dict[str, Any]]:
    if cursor is None:
        return items
    return list(reversed(_after(list(reversed(items)), cursor, "before")))


async def _stored(
    responses: ResponsesServices, principal: Principal, response_id: str
) -> StoredResponse:
    found = await responses.keeper.get(principal.workspace_id, response_id)
    if found is None:
        raise _not_found(response_id)
    return found


def _not_found(response_id: str) -> ApiError:
    return not_found(
        "response_not_found", f"Response with id '{response_id}' not found.", param="response_id"
    )
