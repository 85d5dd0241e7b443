"""JSON answers: the answer type every JSON endpoint returns, and its compact bytes."""

from __future__ import annotations

import json
from typing import Any

import attrs
import orjson

_fallback = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON. orjson on the hot path (a tenth of the stdlib's time per
    frame); the stdlib for what orjson refuses, such as integers beyond 64 bits echoed
    back in an error."""
    try:
        return orjson.dumps(payload)
    except TypeError:
        return _fallback(payload).encode()


@attrs.frozen
class JsonAnswer:
    """A JSON answer before it is written: status, body and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]
