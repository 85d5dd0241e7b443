"""Structured logs: one JSON object per line on standard error, for every logger.

`configure_logging` is called once by the `gateway serve` command. Each line carries the
time, level, logger and message, plus the fields a caller passed as `extra={"fields":
{...}}` (the access log: request id, workspace, route, status, latency, provider).

Credentials never reach a line: whatever the message, anything shaped like a gateway or
vendor key or a bearer token is replaced by `[redacted]` before it is written, and
request bodies (prompts) are only logged when the `log_request_bodies` debug setting
asks for them (see `gateway.operator.middleware`).

What a line costs the request that logs it: `gateway serve` writes through a
`BatchedHandler`, which keeps each record and writes them from `flush_periodically` (a
task of the server's lifespan) every `LOG_FLUSH_S`, formatted there with orjson, in one
write: before, each answer's access line cost ~100 us of stdlib JSON and a redaction
regex, and a write system call, before the answer's last byte left. A warning or an
error, a full batch, and the end of the server write at once.

The access line needs no `LogRecord` either when that handler alone hears it (`sole_batch`:
no other handler, no filter, on the way to the root): the middleware holds the line's
time and fields in the batch (`BatchedHandler.hold_line`), and the flush renders them
with the same formatter as a record (the same line, redacted the same way). A record per
answer cost more than the rest of the access log (its ~30 attributes, the logging
machinery's handler and filter calls, its lock): about 0.05 M instructions per request.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
import trio

# Gateway keys (gw_<kind>_...), OpenAI/Anthropic style keys (sk-...), Google keys (AIza...),
# bearer tokens and Fernet-looking secrets in free text.
SECRET_PATTERN = re.compile(
    r"(gw_[a-z]+_[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,})"
)
REDACTED = "[redacted]"
LOG_FLUSH_S = 0.1
IDLE_FLUSH_S = 1.0
BATCH_LINES = 256  # a batch this long is written at once


def redact(text: str) -> str:
    """`text` with every secret replaced. The pattern can only match where one of its
    literal starts is: looking for those first costs a twentieth of the regex's scan."""
    if "gw_" in text or "sk-" in text or "AIza" in text or "bearer" in text.lower():
        return SECRET_PATTERN.sub(REDACTED, text)
    return text


def redact_json(text: str) -> str:
    """`redact` for a line of JSON as `_json_line` writes it: the same result, with the
    bearer pattern's case-insensitive look skipped where it cannot match. It needs
    whitespace after the word, and such a line holds none but a space or a character
    beyond ASCII (JSON escapes every control character); `isascii` is a flag, not a
    scan, and most access lines have neither."""
    if "gw_" in text or "sk-" in text or "AIza" in text:
        return SECRET_PATTERN.sub(REDACTED, text)
    if (" " in text or not text.isascii()) and "bearer" in text.lower():
        return SECRET_PATTERN.sub(REDACTED, text)
    return text


def _json_line(line: dict[str, Any]) -> str:
    try:  # string keys, the usual case: orjson's plainest (fastest) call
        return orjson.dumps(line, default=str).decode()
    except TypeError:
        pass
    try:
        return orjson.dumps(line, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # what orjson refuses (an integer beyond 64 bits)
        return json.dumps(line, ensure_ascii=False, default=str)


class _Stamps:
    """Each line's time in ISO form with milliseconds, UTC: the date and second part
    made once per second (lines of a batch share it), the milliseconds added per line.
    `datetime.fromtimestamp(...).isoformat(...)` per line was a third of a line's cost."""

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def __call__(self, created: float) -> str:
        second = int(created)
        micro = round((created - second) * 1e6)  # as `fromtimestamp` rounds (half even)
        if micro >= 1_000_000:
            second, micro = second + 1, micro - 1_000_000
        if second != self._second:
            moment = datetime.fromtimestamp(second, UTC)
            self._second, self._prefix = second, moment.strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._prefix}.{micro // 1000:03d}+00:00"


_stamp = _Stamps()


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON, secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        exception = self.formatException(record.exc_info) if record.exc_info else None
        return self.render(
            record.created,
            record.levelname.lower(),
            record.name,
            record.getMessage(),
            fields if isinstance(fields, dict) else None,
            exception,
        )

    @staticmethod
    def render(
        created: float,
        level: str,
        logger: str,
        message: str,
        fields: dict[str, Any] | None,
        exception: str | None = None,
    ) -> str:
        """The line of a record with these parts (a held line's, `HeldLine`, too)."""
        line: dict[str, Any] = {
            "ts": _stamp(created),
            "level": level,
            "logger": logger,
            "message": message,
        }
        if fields:
            line.update(fields)
        if exception is not None:
            line["exception"] = exception
        return redact_json(_json_line(line))


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


# A line held without a record: its time, logger, message and fields (INFO).
HeldLine = tuple[float, str, str, dict[str, Any]]


class BatchedHandler(logging.StreamHandler[TextIO]):
    """A stream handler that keeps records and writes them in batches (see the module
    docstring): `flush()` formats and writes what it holds; a record at WARNING or
    above, or the `BATCH_LINES`-th, is written at once with the rest."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self._held: list[logging.LogRecord | HeldLine] = []

    def hold_line(self, line: HeldLine) -> None:
        """An INFO line held as its parts, for the next flush: what `emit` does with a
        record, without one (`sole_batch` says when nothing else would have seen it)."""
        lock = self.lock
        assert lock is not None  # made by `Handler.__init__`
        with lock:
            held = self._held
            held.append(line)
        if len(held) >= BATCH_LINES:
            self.flush()

    def emit(self, record: logging.LogRecord) -> None:
        # The message is fixed now: its arguments may change before the batch is written.
        record.msg, record.args = record.getMessage(), None
        self._held.append(record)
        if record.levelno >= logging.WARNING or len(self._held) >= BATCH_LINES:
            self.flush()

    def flush(self) -> None:
        self.flush_held()

    def flush_held(self) -> bool:
        """Write what is held; whether there was anything."""
        self.acquire()
        try:
            held, self._held = self._held, []
            if held:
                lines = []
                for entry in held:
                    try:
                        lines.append(self._render(entry))
                    except Exception:
                        self.handleError(_as_record(entry))
                self.stream.write("\n".join(lines) + "\n")
                super().flush()
            return bool(held)
        finally:
            self.release()

    def _render(self, entry: logging.LogRecord | HeldLine) -> str:
        """A record's line, or a held line's: rendered from its parts by the JSON
        formatter, through a record made now by any other."""
        if isinstance(entry, logging.LogRecord):
            return self.format(entry)
        formatter = self.formatter
        if isinstance(formatter, JsonFormatter):
            created, logger, message, fields = entry
            return formatter.render(created, "info", logger, message, fields)
        return self.format(_as_record(entry))


def _as_record(entry: logging.LogRecord | HeldLine) -> logging.LogRecord:
    """The `LogRecord` a held line stands for (for a formatter other than JSON's, and for
    `handleError`)."""
    if isinstance(entry, logging.LogRecord):
        return entry
    created, logger, message, fields = entry
    record = logging.makeLogRecord(
        {"name": logger, "msg": message, "levelno": logging.INFO, "levelname": "INFO"}
    )
    record.created, record.msecs = created, (created - int(created)) * 1000
    record.fields = fields
    return record


def sole_batch(logger: logging.Logger) -> BatchedHandler | None:
    """The `BatchedHandler` that alone hears `logger`'s INFO lines, or None: no other
    handler and no filter on the way to the root, and INFO enabled. A line held there
    (`hold_line`) is then written exactly as a record would have been. Looked at per
    line (a handful of attribute reads): a test's capture handler, or an operator's
    handler added at run time, is seen at once."""
    if not logger.isEnabledFor(logging.INFO):
        return None
    node: logging.Logger | None = logger
    while node is not None:
        if node.filters:
            return None
        handlers = node.handlers
        if handlers:
            handler = handlers[0]
            heard_above = node.propagate and node.parent is not None
            alone = len(handlers) == 1 and not heard_above and not handler.filters
            if alone and isinstance(handler, BatchedHandler) and handler.level <= logging.INFO:
                return handler
            return None
        if not node.propagate:
            return None
        node = node.parent
    return None


@asynccontextmanager
async def batched_logs(every_s: float = LOG_FLUSH_S) -> AsyncIterator[None]:
    """The block's log lines written in batches by `flush_periodically`, the last when
    the block ends."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(flush_periodically, every_s)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()


async def flush_periodically(every_s: float = LOG_FLUSH_S) -> None:
    """Write what the batched handlers hold every `every_s`, and once more when
    cancelled (the server's end), so no line is lost at a graceful exit. While nothing is
    logged the wait doubles, up to `IDLE_FLUSH_S`: an idle gateway wakes once a second."""
    wait = every_s
    try:
        while True:
            await trio.sleep(wait)
            wait = every_s if _flush_batched() else min(wait * 2, IDLE_FLUSH_S)
    finally:
        _flush_batched()


def _flush_batched() -> bool:
    """Flush every batched handler; whether any held a line."""
    wrote = False
    for handler in logging.getLogger().handlers:
        if isinstance(handler, BatchedHandler):
            wrote = handler.flush_held() or wrote
    return wrote


def configure_logging(
    log_format: str = "json",
    *,
    level: int = logging.INFO,
    stream: TextIO | None = None,
    batched: bool = False,
) -> logging.Handler:
    """Route every logger through one handler on `stream` (standard error by default);
    `batched` (what `gateway serve` asks) holds records for `flush_periodically`.

    Returns the handler, so a caller (a test) can remove it again.
    """
    target = stream if stream is not None else sys.stderr
    if batched:
        # No line shows them: each record would look them up (a getpid system call),
        # and walk the caller's frames for its file and line (`_srcfile`: the stdlib's
        # documented switch; neither formatter prints them).
        logging.logProcesses = logging.logThreads = logging.logMultiprocessing = False
        logging._srcfile = None
    handler: logging.StreamHandler[TextIO] = (
        BatchedHandler(target) if batched else logging.StreamHandler(target)
    )
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_gateway_handler", False):
            root.removeHandler(old)
    handler._gateway_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    return handler
