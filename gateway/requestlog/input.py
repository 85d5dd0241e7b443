"""The request log's query parameters, checked into a `store.request_log.LogQuery`.

Pure: every bad value is a 400 `invalid_request` naming the parameter and echoing it,
and a parameter the log does not know is refused rather than ignored (a misspelt filter
would otherwise list everything).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping

from gateway.platform.errors import invalid_request
from gateway.platform.params import moment
from store.request_log import MAX_LIMIT, LogQuery

DEFAULT_LIMIT = 50
KNOWN = frozenset(
    {
        "limit",
        "cursor",
        "since",
        "until",
        "key_id",
        "model",
        "provider",
        "endpoint",
        "status",
        "error_code",
        "min_latency_ms",
    }
)
_STATUS_CLASS = re.compile(r"([1-5])xx")
_CURSOR_PREFIX = "rl:"


def parse_log_query(workspace_id: str, args: Mapping[str, str]) -> LogQuery:
    """`GET /v1/management/request-log`'s query, for the caller's workspace."""
    unknown = sorted(set(args) - KNOWN)
    if unknown:
        raise invalid_request(
            f"Unknown parameter '{unknown[0]}'; the request log takes: {', '.join(sorted(KNOWN))}.",
            param=unknown[0],
            value=args[unknown[0]],
        )
    since, until = moment(args.get("since"), "since"), moment(args.get("until"), "until")
    if since is not None and until is not None and since >= until:
        raise invalid_request("'since' must be before 'until'.", param="since", value=args["since"])
    status, status_class, errors_only = _status(args.get("status"))
    return LogQuery(
        workspace_id=workspace_id,
        limit=_limit(args.get("limit")),
        before_row=decode_cursor(args.get("cursor")),
        since=since,
        until=until,
        key_id=_text(args, "key_id"),
        model=_text(args, "model"),
        provider=_text(args, "provider"),
        endpoint=_text(args, "endpoint"),
        status=status,
        status_class=status_class,
        errors_only=errors_only,
        error_code=_text(args, "error_code"),
        min_latency_ms=_min_latency(args.get("min_latency_ms")),
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
    raise invalid_request(
        "'cursor' is not a cursor of the request log; use the 'next_cursor' of a page.",
        param="cursor",
        value=value,
    )


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if raw.isdigit() and 1 <= int(raw) <= MAX_LIMIT:
        return int(raw)
    raise invalid_request(
        f"'limit' must be an integer from 1 to {MAX_LIMIT}.", param="limit", value=raw
    )


def _text(args: Mapping[str, str], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not value or len(value) > 256:
        raise invalid_request(f"'{name}' must be 1 to 256 characters.", param=name, value=value)
    return value


def _status(raw: str | None) -> tuple[int | None, int | None, bool]:
    """(exact status, status class, errors only) from `502`, `5xx` or `error`."""
    if raw is None:
        return None, None, False
    if raw == "error":
        return None, None, True
    match = _STATUS_CLASS.fullmatch(raw)
    if match is not None:
        return None, int(match.group(1)), False
    if raw.isdigit() and 100 <= int(raw) <= 599:
        return int(raw), None, False
    raise invalid_request(
        "'status' must be a status (502), a class (5xx, 4xx) or 'error' (any status from 400).",
        param="status",
        value=raw,
    )


def _min_latency(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400_000:
        raise invalid_request(
            "'min_latency_ms' must be a number of milliseconds from 0.",
            param="min_latency_ms",
            value=raw,
        )
    return value
