"""Structured logs: one JSON object per line on standard error, for every logger.

`configure_logging` is called once by the `gateway serve` command. Each line carries the
time, level, logger and message, plus the fields a caller passed as `extra={"fields":
{...}}` (the access log: request id, workspace, route, status, latency, provider).

Credentials never reach a line: whatever the message, anything shaped like a gateway or
vendor key or a bearer token is replaced by `[redacted]` before it is written, and
request bodies (prompts) are only logged when the `log_request_bodies` debug setting
asks for them (see `gateway.operator.middleware`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

# Gateway keys (gw_<kind>_...), OpenAI/Anthropic style keys (sk-...), Google keys (AIza...),
# bearer tokens and Fernet-looking secrets in free text.
SECRET_PATTERN = re.compile(
    r"(gw_[a-z]+_[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,})"
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    return SECRET_PATTERN.sub(REDACTED, text)


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON, secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(line, ensure_ascii=False, default=str))


class TextFormatter(logging.Formatter):
    """The classic one-line text format, for people at a terminal; secrets redacted."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            text += " " + " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
        return redact(text)


def configure_logging(
    log_format: str = "json", *, level: int = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Route every logger through one handler on `stream` (standard error by default).

    Returns the handler, so a caller (a test) can remove it again.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_gateway_handler", False):
            root.removeHandler(old)
    handler._gateway_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    return handler
