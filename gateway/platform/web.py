"""Small helpers every blueprint uses: JSON in and out, the caller, the error answer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from quart import Request, Response, request

from gateway.operator.context import note_caller
from gateway.platform.auth import Principal, bearer_token
from gateway.platform.errors import ApiError, invalid_api_key, invalid_request
from gateway.platform.state import AppState
from store import keys
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
    return await authenticate_header(state, req.headers.get("authorization"), req.remote_addr)


async def authenticate_header(
    state: AppState, authorization: str | None, address: str | None
) -> Principal:
    """`authenticate` for callers that hold the raw header (the ASGI fast path)."""
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
