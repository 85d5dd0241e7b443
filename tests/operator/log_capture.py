"""The structured logs of a test's gateway, captured: one JSON object per line, read back
as dicts (shared by the log, request-identity and metric-label tests)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.operator.logs import configure_logging


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_logging("json", stream=stream)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def access(stream: io.StringIO) -> list[dict[str, Any]]:
    return [line for line in lines(stream) if line["logger"] == "gateway.access"]


def line_of(stream: io.StringIO, request_id: str) -> dict[str, Any]:
    """The one access-log line of a request."""
    [found] = [line for line in access(stream) if line["request_id"] == request_id]
    return found
