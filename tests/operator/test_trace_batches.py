"""The trace export worker sends the spans in batches, not as a stream: the spans that
end while a batch is on its way to the export process wait for the next interval (or a
full batch) instead of following at once in batches of a few, each an HTTP export; its
last flush still sends every span, those that ended during it included."""

from __future__ import annotations

import attrs
import trio

from gateway.platform.tracing import BATCH_SIZE, SERVER, ExportSettings, Span, Tracing
from gateway.workers import trace_export


@attrs.define
class SlowExport:
    """The export process as the worker sees it: each batch takes 50 ms to answer, and
    a request's span ends meanwhile (traffic does not stop for an export)."""

    tracing: Tracing
    batches: list[int] = attrs.field(factory=list)

    async def export(self, spans: list[Span]) -> tuple[int, int]:
        self.batches.append(len(spans))
        await trio.sleep(0.05)
        if len(self.batches) < 5:
            end_spans(self.tracing, 1)
        return len(spans), 0


def end_spans(tracing: Tracing, count: int) -> None:
    for _ in range(count):
        Span(tracing.queue, "POST chat", SERVER, 1, None, {}).end()


async def sent(count: int, *, drain: bool = False) -> tuple[Tracing, SlowExport]:
    """`count` spans queued, then one `send_queued` through a `SlowExport`."""
    tracing = Tracing(ExportSettings("http://127.0.0.1:9/v1/traces", None, 1.0))
    end_spans(tracing, count)
    exporter = SlowExport(tracing)
    await trace_export.send_queued(tracing, exporter, drain=drain)  # type: ignore[arg-type]
    return tracing, exporter


async def test_spans_ending_during_an_export_wait_for_the_next_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tracing, exporter = await sent(3)
    assert exporter.batches == [3]
    assert len(tracing.queue) == 1
    assert tracing.exported == 3


async def test_a_full_queue_leaves_in_full_batches(autojump_clock: trio.testing.MockClock) -> None:
    tracing, exporter = await sent(BATCH_SIZE * 2 + 10)
    assert exporter.batches == [BATCH_SIZE, BATCH_SIZE, 10]
    assert len(tracing.queue) == 3


async def test_the_last_flush_sends_the_spans_that_end_during_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tracing, exporter = await sent(3, drain=True)
    assert exporter.batches == [3, 1, 1, 1, 1]
    assert len(tracing.queue) == 0
    assert tracing.exported == 7
