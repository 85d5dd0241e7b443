"""The usage writer's process sink: batches go over a pipe to a child process that
writes them (`gateway.workers.usage_child`), so their Python work no longer holds the
event loop's interpreter lock (issue 23).

The gateway's side of a batch is one `attrgetter` per record, one orjson document and
one pipe write; the child rebuilds the records, writes rows, rollups and sketches in one
transaction and answers with an acknowledgement. One batch is in flight at a time (the
writer waits for its answer), so the pipe holds at most one batch: bounded.

Ownership: the writer's task (`UsageWriter.run`) starts the child and, at the end,
closes its input and waits for its exit (the child writes what it received, then exits),
killing it only past the shutdown grace period. If the gateway itself dies, the kernel
closes the pipe, and the child commits what it had and exits: no orphan.

A child that dies is started again, at once the first time and then backing off (0.5 s
doubling to 5 s) while it keeps dying; its death is logged as an error. The batch it held
unanswered (it died, or was killed past the ack timeout) is sent again to the new child,
up to `RESENDS` times, under the same batch id: the child may have committed it just
before its death, and the store skips a batch id it has already written
(`store.usage_batches`), so each record is written exactly once. A batch the database
refused (the child answered with an error) is not sent again: it would be refused again.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

import store
from gateway.workers.usage_sinks import BatchFailed
from gateway.workers.usage_wire import (
    POSTGRES_ARGUMENT,
    URL_VARIABLE,
    FrameReader,
    decode_ack,
    encode_batch,
)
from store.response_rows import StoredRow
from store.usage import UsageRecord

logger = logging.getLogger(__name__)

RESTART_DELAY_S = 0.5
MAX_RESTART_DELAY_S = 5.0
# The longest a batch may go unanswered before the child is taken for hung and killed
# (a batch takes milliseconds; SQLite's busy timeout and retries take seconds).
ACK_TIMEOUT_S = 30.0
# How many times an unanswered batch is sent again to a new child before it counts failed.
RESENDS = 2


class _ChildLost(Exception):
    """The child died or was killed holding a batch: the batch may be sent again."""


def child_command(db_path: Path, *, postgres: bool = False) -> list[str]:
    """The child's command line: the SQLite file's path, or `postgres` (its URL, which may
    hold a password, goes through the environment, never the visible command line)."""
    target = POSTGRES_ARGUMENT if postgres else str(db_path)
    return [sys.executable, "-m", "gateway.workers.usage_child", target]


def _child_env(database_url: str | None) -> dict[str, str]:
    """The gateway's environment, with its own code first on the path, so the child
    imports the same modules however the gateway was started; and the store's URL."""
    root = str(Path(store.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    if database_url is not None:
        env[URL_VARIABLE] = database_url
    return env


class ProcessSink:
    """Writes batches through a child process; see the module docstring."""

    def __init__(
        self,
        db_path: Path,
        *,
        database_url: str | None = None,
        restart_delay: float = RESTART_DELAY_S,
        ack_timeout: float = ACK_TIMEOUT_S,
    ) -> None:
        self._command = child_command(db_path, postgres=database_url is not None)
        self._database_url = database_url
        self._restart_delay = restart_delay
        self._ack_timeout = ack_timeout
        self._process: trio.Process | None = None
        self._frames = FrameReader()
        self._seq = 0
        self._failures = 0  # child deaths since the last answered batch
        self._start_after = 0.0
        self.restarts = 0  # children started after the first
        self.resent = 0  # batches sent again after their child was lost

    @property
    def pid(self) -> int | None:
        """The running child's process id (for tests and logs)."""
        return None if self._process is None else self._process.pid

    @property
    def sent(self) -> int:
        """Batches handed to a child so far (answered or not)."""
        return self._seq

    async def start(self) -> None:
        """Start the child now, so that it is ready (imports done) by the first batch; a
        failure here is logged and tried again by the first batch."""
        try:
            await self._running()
        except BatchFailed as exc:
            logger.error("usage writer process: %s", exc)

    async def write(
        self, batch: list[UsageRecord], batch_id: str, responses: Sequence[StoredRow] = ()
    ) -> float:
        """The batch to the child; to a new child again while its child is lost."""
        for resend in range(RESENDS + 1):
            if resend:
                self.resent += 1
                logger.warning(
                    "usage batch %s (%d records) sent again to a new writer process",
                    batch_id,
                    len(batch),
                )
            try:
                return await self._attempt(batch, batch_id, responses)
            except _ChildLost as lost:
                failure = lost
        raise BatchFailed(f"{failure} ({RESENDS + 1} writer processes lost it)") from failure

    async def _attempt(
        self, batch: list[UsageRecord], batch_id: str, responses: Sequence[StoredRow]
    ) -> float:
        process = await self._running()
        with trio.move_on_after(self._ack_timeout, shield=True):
            return await self._exchange(process, batch, batch_id, responses)
        await self._lost(f"no answer within {self._ack_timeout:g} s; killed")
        raise _ChildLost(f"the writer process did not answer within {self._ack_timeout:g} s")

    async def _exchange(
        self,
        process: trio.Process,
        batch: list[UsageRecord],
        batch_id: str,
        responses: Sequence[StoredRow],
    ) -> float:
        assert process.stdin is not None and process.stdout is not None
        self._seq += 1
        try:
            await process.stdin.send_all(encode_batch(self._seq, batch_id, batch, responses))
            payload = await self._frames.next(process.stdout)
        except (trio.BrokenResourceError, trio.ClosedResourceError, EOFError) as exc:
            await self._lost(f"died holding a batch of {len(batch)} records ({exc!r})")
            raise _ChildLost("the writer process died holding the batch") from exc
        try:
            seq, written, error, seconds = decode_ack(payload)
        except (ValueError, TypeError):
            seq, written, error, seconds = -1, 0, None, 0.0  # garbled: out of step below
        if seq != self._seq:
            await self._lost(f"answered batch {seq} for batch {self._seq}; killed")
            raise _ChildLost("the writer process answered out of step")
        self._failures = 0
        if error is not None or written != len(batch):
            raise BatchFailed(error or f"{written} of {len(batch)} records written")
        return seconds

    async def _running(self) -> trio.Process:
        """The live child: the current one, or a new one (after the backoff if the last
        ones kept dying)."""
        process = self._process
        if process is not None and process.returncode is None:
            return process
        if process is not None:
            await self._lost(f"exited with status {process.returncode} while idle")
        await trio.sleep_until(self._start_after)
        try:
            process = await trio.lowlevel.open_process(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_child_env(self._database_url),
            )
        except OSError as exc:
            self._note_failure()
            raise BatchFailed(f"could not start the writer process: {exc}") from exc
        if self._seq:
            self.restarts += 1
            logger.warning("usage writer process started again (pid %d)", process.pid)
        self._process = process
        self._frames.clear()
        return process

    async def _lost(self, what: str) -> None:
        """Log the child's death (or kill a hung one), reap it, and back off."""
        process = self._process
        self._process = None
        if process is None:
            return
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            await _close_pipes(process)
        logger.error(
            "usage writer process %d %s (status %s)", process.pid, what, process.returncode
        )
        self._note_failure()

    def _note_failure(self) -> None:
        self._failures += 1
        delay = 0.0
        if self._failures > 1:
            delay = min(MAX_RESTART_DELAY_S, self._restart_delay * 2 ** (self._failures - 2))
        self._start_after = trio.current_time() + delay

    async def aclose(self) -> None:
        """Close the child's input and wait for it to exit (it writes what it received
        first); the caller's deadline bounds the wait, past it the child is killed."""
        process = self._process
        self._process = None
        if process is None:
            return
        try:
            assert process.stdin is not None
            await process.stdin.aclose()
            status = await process.wait()
            if status != 0:
                logger.error("usage writer process %d exited with %s", process.pid, status)
        finally:
            if process.returncode is None:
                logger.error("usage writer process %d outlived the grace period", process.pid)
                process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
                await _close_pipes(process)


async def _close_pipes(process: trio.Process) -> None:
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            await stream.aclose()
