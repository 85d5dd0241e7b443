"""What a usage batch costs the gateway's own process, thread writer against process
writer (issue 23): `python -m bench.usage_writer_cost [--records N] [--batch B] [--rounds R]`.

Counts CPU, not latency, so that the figure holds on a loaded machine: the same records
(every field set) go through `UsageWriter` with each sink into a fresh SQLite file, a
batch of B records at a time (submit B, `flush()`), alternating the sinks R times. A
sink that writes nothing gives the harness's own cost (submit, flush, the writer's
task), to subtract. Per record it reports the CPU of this process (every thread: with
the thread sink this is the work that holds the interpreter lock the event loop needs)
and, for the process sink, the child's CPU (read from /proc before it exits). The
difference between the thread sink's in-process CPU and the process sink's is the
interpreter time a batch no longer takes from the event loop.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio

from bench import procs
from gateway.workers.usage_process import ProcessSink
from gateway.workers.usage_sinks import BatchSink
from gateway.workers.usage_writer import UsageWriter
from store.db import DB_FILENAME, open_database
from store.response_rows import StoredRow
from store.usage import UsageRecord

T0 = datetime(2026, 11, 23, tzinfo=UTC)


def record(n: int) -> UsageRecord:
    return UsageRecord(
        request_id=f"req_{n}",
        key_id=f"key_{n % 7}",
        workspace_id="default",
        model=("gpt-4o-mini", "claude-sonnet", "mistral-small")[n % 3],
        provider=("openai", "anthropic", "mistral")[n % 3],
        endpoint="chat",
        status=200,
        created_at=T0 + timedelta(milliseconds=n),
        prompt_tokens=20,
        completion_tokens=30,
        cost_usd=0.0001,
        latency_ms=12.5 + n % 40,
        energy_kwh=0.00001,
        carbon_gco2e=0.004,
        project="bench",
        tags=("a", "b"),
        prompt_hash=f"h{n % 100}",
    )


class NullSink:
    """Writes nothing: what the harness itself (submit, flush, the writer's task) costs."""

    async def start(self) -> None:
        return None

    async def write(
        self, batch: list[UsageRecord], batch_id: str, responses: Sequence[StoredRow] = ()
    ) -> float:
        await trio.lowlevel.checkpoint()
        return 0.0

    async def aclose(self) -> None:
        return None


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_run(kind: str, records: int, batch: int) -> dict[str, float]:
    """CPU seconds per record in this process (and the child's) for one sink."""
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(Path(tmp))
        sink: BatchSink | None = None
        if kind == "process":
            sink = ProcessSink(Path(tmp) / DB_FILENAME)
        elif kind == "none":
            sink = NullSink()
        writer = UsageWriter(db, sink=sink, batch_size=batch)
        items = [record(n) for n in range(records)]
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(writer.run)
                writer.submit(items[0])
                await writer.flush()  # the child is up: its start-up is not counted
                child = sink.pid if isinstance(sink, ProcessSink) else None
                child_before = procs.cpu_seconds(child) if child else 0.0
                before = _cpu_self()
                for start in range(1, records, batch):
                    for item in items[start : start + batch]:
                        writer.submit(item)
                    await writer.flush()
                spent = _cpu_self() - before
                child_spent = procs.cpu_seconds(child) - child_before if child else 0.0
                nursery.cancel_scope.cancel()
        finally:
            db.close()
        assert writer.written == records and writer.failed == 0, (writer.written, writer.failed)
        per = records - 1
        return {"gateway_us": spent / per * 1e6, "child_us": child_spent / per * 1e6}


async def main_async(records: int, batch: int, rounds: int) -> None:
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for n in range(rounds):
        for kind in ("none", "thread", "process"):
            found = await one_run(kind, records, batch)
            print(
                f"round {n + 1} {kind:7} batch {batch}: gateway process {found['gateway_us']:.1f}"
                f" us/record, writer child {found['child_us']:.1f} us/record"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3001)
    parser.add_argument("--batch", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    trio.run(main_async, args.records, args.batch, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
