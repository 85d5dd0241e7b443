"""Readers for the scalar fields of a request body (and the moments of a query), each
naming its parameter.

Pure and framework-free. They raise the generic 400 `invalid_request`; the endpoint-specific
codes (`invalid_input`, `invalid_documents`, ...) belong to the modules that own those fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from gateway.platform.errors import invalid_period, invalid_request


def body_object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.")
    return body


def required_string(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        raise invalid_request(f"'{name}' is required.", param=name)
    if not isinstance(value, str) or not value.strip():
        raise invalid_request(f"'{name}' must be a non-empty string.", param=name, value=value)
    return value


def optional_string(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_request(f"'{name}' must be a string.", param=name, value=value)
    return value


def optional_bool(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid_request(f"'{name}' must be a boolean.", param=name, value=value)
    return value


def optional_positive_int(body: Mapping[str, Any], name: str) -> int | None:
    """An integer of at least 1 (JSON booleans are not integers here, unlike in Python)."""
    value = body.get(name)
    if value is None:
        return None
    whole = whole_number(value)
    if whole is None or whole < 1:
        raise invalid_request(
            f"'{name}' must be an integer of at least 1.", param=name, value=value
        )
    return whole


def optional_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    whole = whole_number(value)
    if whole is None:
        raise invalid_request(f"'{name}' must be an integer.", param=name, value=value)
    return whole


def whole_number(value: Any) -> int | None:
    """`value` as an int when JSON counts it an integer (`5` and `5.0` alike, as JSON
    Schema's `integer` does; a boolean never), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def optional_object(body: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_request(f"'{name}' must be an object.", param=name, value=value)
    return value


def bounded_number(body: Mapping[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_request(f"'{name}' must be a number.", param=name, value=value)
    if not low <= value <= high:
        raise invalid_request(
            f"'{name}' must be between {low:g} and {high:g}.", param=name, value=value
        )
    return float(value)


def not_auto(model: str) -> None:
    """`auto` routes chat by quality and price; retrieval vectors and scores are only
    comparable within one model, so picking one for the caller would be a silent trap."""
    if model == "auto":
        raise invalid_request(
            "'auto' routing is for chat; name an embedding or rerank model.",
            param="model",
            value=model,
        )


def moment(value: str | None, param: str) -> datetime | None:
    """A query's date (YYYY-MM-DD, midnight UTC) or ISO 8601 time (UTC when it names no
    zone); None when absent.

    The time is converted to UTC here, where a failure is the caller's 400: a time at the
    edge of the calendar with an offset (9999-12-31T23:59-05:00) has no UTC equivalent
    (nor an epoch) and would otherwise overflow in the store as a 500.
    """
    if not value:
        return None
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
        found = found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)
        found.timestamp()  # the store's epoch: a time it cannot hold is refused here
        return found
    except (ValueError, OverflowError):
        raise invalid_request(
            f"'{param}' must be a date (YYYY-MM-DD) or an ISO 8601 time.", param=param, value=value
        ) from None


def utc_moment(moment: date | datetime | None, param: str) -> datetime | None:
    """A declared date or date-time query parameter as a moment in UTC (a date is its
    midnight). A time at the calendar's edge with an offset (9999-12-31T23:59-05:00) has
    no UTC equivalent a store can hold: `invalid_period`, naming `param`."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    try:
        found = moment.astimezone(UTC)
        found.timestamp()
    except (OverflowError, ValueError):
        raise invalid_period(
            f"'{param}' lies beyond the times the log can hold.",
            param=param,
            value=moment.isoformat(),
        ) from None
    return found
