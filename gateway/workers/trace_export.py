"""The trace exporter: finished spans to the OTLP endpoint, in batches, through a process.

Runs only when tracing is on (`otlp_endpoint`). Every `EXPORT_INTERVAL_S`, or as soon as
a batch is full, it takes the queued spans (`gateway.platform.tracing.SpanQueue`) and
hands their rows to the export process (`gateway.workers.trace_child`: OTLP encoding
and the SDK's OTLP/HTTP client, off the event loop's interpreter), one batch at a time,
and counts what the process says it exported or could not. Spans ending while a batch
is on its way wait for the next wake-up (`send_queued`).

Ownership: this worker's task starts the child (again after it died: the batch it held
counts as failed) and, at the end, sends what is queued, closes the child's input and
waits for it to exit, all within the export timeout, killing it past that.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import orjson
import trio

import gateway
from gateway.platform.tracing import ExportSettings, Span, Tracing
from gateway.workers import trace_child
from gateway.workers.usage_wire import FrameReader, frame

logger = logging.getLogger(__name__)

EXPORT_INTERVAL_S = 1.0
ANSWER_MARGIN_S = 5.0  # beyond the export's own timeout, for the child's encoding


async def run(
    tracing: Tracing | None, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    task_status.started()
    if tracing is None:
        return
    exporter = ExportProcess(tracing.export)
    try:
        while True:
            with trio.move_on_after(EXPORT_INTERVAL_S):
                await tracing.queue.ready.wait()
            tracing.queue.ready = trio.Event()
            await send_queued(tracing, exporter)
    finally:
        with trio.move_on_after(tracing.export.timeout_s, shield=True):
            await send_queued(tracing, exporter, drain=True)
            await exporter.aclose()
        exporter.kill()


async def send_queued(tracing: Tracing, exporter: ExportProcess, *, drain: bool = False) -> None:
    """The spans queued now to the export process, a batch at a time; with `drain`
    (the last flush), also those that end meanwhile, until none is left.

    Not the spans that end while a batch is on its way: at a few hundred requests a
    second they would leave as a stream of small batches, each an HTTP request to the
    endpoint and a round trip through the pipe (at 244 req/s: ten exports a second of
    50 spans each instead of one, most of the export process's CPU). They wait for the
    next interval, or for a full batch."""
    pending = len(tracing.queue)
    while batch := tracing.queue.take(None if drain else pending):
        pending -= len(batch)
        exported, failed = await exporter.export(batch)
        tracing.exported += exported
        tracing.failed += failed


class ExportProcess:
    """The export child and its pipes (see the module docstring)."""

    def __init__(self, export: ExportSettings) -> None:
        self._export = export
        self._process: trio.Process | None = None
        self._frames = FrameReader()
        self._seq = 0

    async def export(self, spans: list[Span]) -> tuple[int, int]:
        """(exported, failed) of one batch; a child that dies or stays silent past the
        export's deadline is killed, and the batch counts as failed."""
        process = await self._running()
        self._seq += 1
        payload = orjson.dumps([self._seq, [span.row() for span in spans]])
        with trio.move_on_after(self._export.timeout_s + ANSWER_MARGIN_S):
            try:
                assert process.stdin is not None and process.stdout is not None
                await process.stdin.send_all(frame(payload))
                seq, exported, failed = orjson.loads(await self._frames.next(process.stdout))
            except (trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
                logger.error(
                    "the span exporter process died holding %d spans (%r)", len(spans), exc
                )
            else:
                if seq == self._seq:
                    return int(exported), int(failed)
        self.kill()
        return 0, len(spans)

    async def _running(self) -> trio.Process:
        """The live child: the current one, or a new one (the dead one reaped first)."""
        process = self._process
        if process is not None and process.returncode is None:
            return process
        if process is not None:
            logger.error("span exporter process %d exited (%s)", process.pid, process.returncode)
            await _reaped(process)
        self._process = await trio.lowlevel.open_process(
            [sys.executable, "-m", trace_child.__name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self._environment(),
        )
        self._frames.clear()
        return self._process

    def _environment(self) -> dict[str, str]:
        """The gateway's environment, its own code first on the path, and where to send
        (the headers, a collector's key, never on the visible command line)."""
        root = str(Path(gateway.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
        env[trace_child.ENDPOINT_VARIABLE] = self._export.endpoint
        env[trace_child.HEADERS_VARIABLE] = self._export.headers or ""
        env[trace_child.TIMEOUT_VARIABLE] = str(self._export.timeout_s)
        return env

    def kill(self) -> None:
        """Stop the child now (it is reaped by the next start, or at `aclose`)."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()

    async def aclose(self) -> None:
        """Close the child's input and wait for its exit (the caller bounds the wait)."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                await process.stdin.aclose()
            await process.wait()
        finally:
            await _reaped(process)


async def _reaped(process: trio.Process) -> None:
    """`process` killed if it still runs, waited for, its pipes closed."""
    if process.returncode is None:
        process.kill()
    with trio.CancelScope(shield=True):
        await process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                await stream.aclose()
