"""The request log's query parameters: declared (`LogParameters`, from which the OpenAPI
document's parameters and the server's checks both come) and turned into a
`store.request_log.LogQuery`.

Pure: every value the declaration refuses is a 400 `invalid_request` naming the parameter
and echoing it, and a parameter the log does not know is refused rather than ignored (a
misspelt filter would otherwise list everything). What the declaration cannot say has a
code of its own: a cursor the log never handed out (`invalid_cursor`), a window whose
start is not before its end or that no UTC time can hold (`invalid_period`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from datetime import date, datetime
from typing import Annotated

import attrs

from gateway.platform.errors import ApiError, invalid_period, invalid_request
from gateway.platform.params import utc_moment
from gateway.platform.shapes import Doc, Length, Pattern, Range, parse_query
from store.request_log import MAX_LIMIT, LogQuery

DEFAULT_LIMIT = 50
_CURSOR_PREFIX = "rl:"

Filter = Annotated[str, Length(least=1, most=256)]
Moment = Annotated[
    date | datetime, Doc("A date (YYYY-MM-DD, midnight UTC) or an ISO 8601 time with its zone")
]
Status = Annotated[
    str,
    Pattern("^([1-5][0-9][0-9]|[1-5]xx|error)$", "a status (502), a class (5xx) or 'error'"),
    Doc("A status (502), a class (5xx) or error (any status from 400)"),
]


@attrs.frozen
class LogParameters:
    """`GET /v1/management/request-log`'s filters and page; each left out filters nothing."""

    limit: Annotated[int, Range(least=1, most=MAX_LIMIT)] = DEFAULT_LIMIT
    cursor: Annotated[str, Doc("The previous page's next_cursor")] | None = None
    since: Moment | None = None
    until: Annotated[Moment, Doc("Before this date or time")] | None = None
    key_id: Annotated[Filter, Doc("Only this API key's requests")] | None = None
    model: Annotated[Filter, Doc("The model asked for or the model that served")] | None = None
    provider: Annotated[Filter, Doc("The provider that served (or failed) the call")] | None = None
    endpoint: Annotated[Filter, Doc("The family: chat, embeddings, audio.speech, ...")] | None = (
        None
    )
    status: Status | None = None
    error_code: Annotated[Filter, Doc("The error envelope's code: provider_timeout")] | None = None
    min_latency_ms: Annotated[float, Range(least=0, most=86_400_000)] | None = None


KNOWN = frozenset(f.name for f in attrs.fields(LogParameters))


def parse_log_query(workspace_id: str, args: Mapping[str, str]) -> LogQuery:
    """`GET /v1/management/request-log`'s query, for the caller's workspace."""
    unknown = sorted(set(args) - KNOWN)
    if unknown:
        raise invalid_request(
            f"Unknown parameter '{unknown[0]}'; the request log takes: {', '.join(sorted(KNOWN))}.",
            param=unknown[0],
            value=args[unknown[0]],
        )
    asked = parse_query(LogParameters, args)
    since, until = utc_moment(asked.since, "since"), utc_moment(asked.until, "until")
    if since is not None and until is not None and since >= until:
        raise invalid_period("'since' must be before 'until'.", param="since", value=args["since"])
    status, status_class, errors_only = _status(asked.status)
    return LogQuery(
        workspace_id=workspace_id,
        limit=asked.limit,
        before_row=decode_cursor(asked.cursor),
        since=since,
        until=until,
        key_id=asked.key_id,
        model=asked.model,
        provider=asked.provider,
        endpoint=asked.endpoint,
        status=status,
        status_class=status_class,
        errors_only=errors_only,
        error_code=asked.error_code,
        min_latency_ms=asked.min_latency_ms,
    )


def encode_cursor(row_id: int) -> str:
    """The opaque cursor of the page after the entry `row_id`."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{row_id}".encode()).decode().rstrip("=")


def decode_cursor(value: str | None) -> int | None:
    if not value:
        return None
    try:
        text = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        if text.startswith(_CURSOR_PREFIX) and text[len(_CURSOR_PREFIX) :].isdigit():
            return int(text[len(_CURSOR_PREFIX) :])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise ApiError(
        400,
        "invalid_cursor",
        "'cursor' is not a cursor of the request log; use the 'next_cursor' of a page.",
        param="cursor",
        value=value,
    )


def _status(raw: str | None) -> tuple[int | None, int | None, bool]:
    """(exact status, status class, errors only) from `502`, `5xx` or `error` (the
    declaration's pattern has admitted only these)."""
    if raw is None:
        return None, None, False
    if raw == "error":
        return None, None, True
    if raw.endswith("xx"):
        return None, int(raw[0]), False
    return int(raw), None, False
