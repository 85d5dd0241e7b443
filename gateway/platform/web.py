"""Small helpers every blueprint uses: JSON in and out, the caller, the error answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import attrs
import orjson
from quart import Request, Response, request
from quart.wrappers.response import ResponseBody

from gateway.agents.gate import AGENT_SESSION_HEADER, session_of
from gateway.organization.roles import Action
from gateway.organization.secrets import USER_TOKEN_PREFIX
from gateway.platform.auth import Principal, bearer_token, operator_key
from gateway.platform.body import StreamAnswer, StreamBody
from gateway.platform.errors import ApiError, invalid_api_key, invalid_request
from gateway.platform.request_context import note_caller
from gateway.platform.sessions import user_principal
from gateway.platform.state import AppState
from store import keys, workspaces
from store.secrets import hash_key

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        _encode(body), status=status, headers=dict(headers or {}), content_type="application/json"
    )


def error_response(error: ApiError) -> Response:
    return json_response(error.body(), error.status, error.headers)


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 UTC with a trailing Z, as the management objects carry times."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def authenticate(state: AppState, req: Request | None = None) -> Principal:
    """The caller of this request: from the in-memory ring, else from the store.

    The store fallback finds keys created while the server runs by another process (the
    `gateway keys create` command); found keys join the ring.
    """
    req = req if req is not None else request
    return await authenticate_header(
        state,
        req.headers.get("authorization"),
        req.remote_addr,
        agent_session=req.headers.get(AGENT_SESSION_HEADER),
    )


async def authenticate_manager(
    state: AppState, action: Action, req: Request | None = None
) -> Principal:
    """The caller of a management route, allowed to perform `action` in its workspace.

    Accepts an API key (a plain or a service account's) or a user access token. The
    workspace is the one named by `X-Workspace-ID`, else the caller's first; one the
    caller may not reach is a 404 like an unknown one. The role check comes first, so a
    caller learns nothing about workspaces it could not act in anyway.
    """
    req = req if req is not None else request
    principal = await authenticate_any(state, req)
    principal.require_action(action)
    if operator_key(principal.credential):
        principal = await _with_organization_reach(state, principal)
    return principal.in_workspace(req.headers.get("x-workspace-id") or None)


async def authenticate_reader(state: AppState, req: Request | None = None) -> Principal:
    """Any valid API key, in its own workspace, or in the one `X-Workspace-ID` names when
    the caller may reach it (as on the management routes, with a role that may view
    analytics): the status page and detailed health of the workspace asked for, never
    silently the caller's home one."""
    req = req if req is not None else request
    principal = await authenticate(state, req)
    wanted = req.headers.get("x-workspace-id") or None
    if wanted is None or wanted == principal.workspace_id:
        return principal
    return await authenticate_manager(state, "view_analytics", req)


async def _with_organization_reach(state: AppState, principal: Principal) -> Principal:
    """The operator's key reaching every workspace of its organisation, its own first."""
    org, home = principal.organization_id, principal.key.workspace_id
    found = await state.db.run(lambda d: workspaces.list_workspaces(d, org))
    return attrs.evolve(principal, reach=(home, *(w.id for w in found if w.id != home)))


async def authenticate_any(state: AppState, req: Request) -> Principal:
    """An API key or a user access token (the latter only for management routes)."""
    token = bearer_token(req.headers.get("authorization"))
    if token is not None and token.startswith(USER_TOKEN_PREFIX):
        organization = req.headers.get("x-organization-id") or None
        return await user_principal(state, token, organization)
    return await authenticate(state, req)


async def authenticate_header(
    state: AppState,
    authorization: str | None,
    address: str | None,
    *,
    agent_session: str | None = None,
) -> Principal:
    """`authenticate` for callers that hold the raw header (the ASGI fast path); an
    agent's key carries the session its request names."""
    token = bearer_token(authorization)
    if token is None:
        raise invalid_api_key("Missing API key: send 'Authorization: Bearer <key>'.")
    record = state.keyring.lookup(token)
    if record is None and token.startswith("gw_"):
        digest = hash_key(token)
        record = await state.db.run(lambda d: keys.find_by_hash(d, digest))
        if record is not None and record.status == "active":
            state.keyring.put(record)
    principal = state.keyring.admit(record, address)
    note_caller(principal.workspace_id, principal.key_id)
    if principal.key.agent_id is not None:
        return attrs.evolve(principal, agent_session=session_of(agent_session))
    return principal


async def read_json(req: Request | None = None, *, optional: bool = False) -> Any:
    """The decoded JSON body; 400 when it is not JSON, 413 when it is too large."""
    req = req if req is not None else request
    raw = await req.get_data(as_text=False)
    if not raw:
        if optional:
            return {}
        raise invalid_request("The request body must be a JSON object.")
    return decode_json(raw if isinstance(raw, bytes) else raw.encode())


def decode_json(raw: bytes) -> Any:
    """Parse a request body; 400 `invalid_json` for anything that is not JSON text.

    orjson also refuses what the stdlib would let through and no encoder accepts later
    (lone surrogates such as `"\\ud800"`, NaN, infinities), so they stop at the door.
    """
    try:
        return orjson.loads(raw)
    except ValueError as exc:
        raise ApiError(
            400, "invalid_json", f"The request body is not valid JSON text: {exc}", param=None
        ) from None


async def read_object(req: Request | None = None, *, optional: bool = False) -> dict[str, Any]:
    body = await read_json(req, optional=optional)
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    return body


def stream_response(answer: StreamAnswer) -> Response:
    """A streamed answer as a Quart response.

    Quart sends the response head before it enters the body, so a body whose start can
    fail (an upstream race) belongs on the fast path's route table
    (`gateway.platform.asgi`), which enters the body first; this is for bodies that start
    with what they already hold (a relay of an open source, a file on disk).
    """
    return Response(
        _QuartBody(answer.body),
        status=answer.status,
        headers=dict(answer.headers),
        content_type=answer.body.content_type,
    )


class _QuartBody(ResponseBody):
    """Quart's body interface around a `StreamBody` (the two have the same shape)."""

    def __init__(self, body: StreamBody) -> None:
        self._body = body

    async def __aenter__(self) -> AsyncIterator[bytes]:
        return await self._body.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._body.__aexit__(exc_type, exc, tb)
