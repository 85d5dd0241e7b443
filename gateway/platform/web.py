"""Small helpers every Quart route uses: JSON in and out, the error answer, a stream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast, overload

import orjson
from quart import Request, Response, request
from quart.wrappers.response import ResponseBody

from gateway.platform.body import StreamAnswer
from gateway.platform.errors import ApiError, invalid_request

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        _encode(body), status=status, headers=dict(headers or {}), content_type="application/json"
    )


def error_response(error: ApiError) -> Response:
    return json_response(error.body(), error.status, error.headers)


@overload
def iso(moment: datetime) -> str: ...


@overload
def iso(moment: None) -> None: ...


@overload
def iso(moment: datetime | None) -> str | None: ...


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 UTC with a trailing Z, as the management objects carry times."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


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
    with what they already hold (a relay of an open source, a file on disk). Quart sends
    a body with `async with response.response as frames`: the body's own `open()` is that
    context manager, so nothing forwards to it by hand.
    """
    response = Response(None, status=answer.status, headers=dict(answer.headers))
    response.content_type = answer.body.content_type
    response.response = cast(ResponseBody, answer.body.open())
    return response
