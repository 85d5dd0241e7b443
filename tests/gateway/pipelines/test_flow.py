"""The overlapped pipeline at exact virtual times (autojump clock, scripted stages).

With recognition final at T, the model's first sentence complete a after it and the
synthesiser's first bytes b after that, the first `audio.chunk` leaves at T+a+b, long
before the model has finished; audio leaves in sentence order; syntheses in flight stay
bounded; cancellation and failures close every upstream.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio

from gateway.kernels.voice import flow
from gateway.kernels.voice.flow import Event, Trace, run_pipeline
from tests.gateway.pipelines.scripted import ScriptedStages

T, A, B = 0.3, 0.2, 0.15
STT = [(0.1, "What is"), (0.1, "What is the time"), (0.1, "What is the time?")]
LLM = [
    (0.1, "It is"),
    (0.1, " noon. "),  # the first sentence is complete at T + 0.2 = T + A
    (0.3, "The sun"),
    (0.3, " is high"),
    (0.3, " today."),  # the answer ends at T + 1.1; the rest is flushed then
]


async def run(
    stages: ScriptedStages, *, speak: bool = True, encoder: flow.Encoder | None = None
) -> tuple[list[tuple[float, Event]], Trace]:
    timed: list[tuple[float, Event]] = []
    send, receive = trio.open_memory_channel[Event](flow.EVENT_BUFFER)
    trace: Trace | None = None

    async def produce() -> None:
        nonlocal trace
        trace = await run_pipeline(stages, send, speak=speak, encoder=encoder)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        async with receive:
            async for event in receive:
                timed.append((trio.current_time(), event))
    assert trace is not None
    return timed, trace


def first(timed: list[tuple[float, Event]], kind: str) -> float:
    return next(at for at, event in timed if event["type"] == kind)


def kinds(timed: list[tuple[float, Event]]) -> list[str]:
    return [event["type"] for _, event in timed]


async def test_the_first_audio_leaves_at_stt_plus_first_sentence_plus_first_bytes(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B)
    timed, trace = await run(stages)

    assert first(timed, "transcription.partial") == pytest.approx(0.1)
    assert first(timed, "transcription.final") == pytest.approx(T)
    assert first(timed, "llm.token") == pytest.approx(T + 0.1)
    assert first(timed, "audio.chunk") == pytest.approx(T + A + B)
    assert first(timed, "llm.done") == pytest.approx(T + 1.1)  # long after the first audio
    assert stages.sentences == ["It is noon.", "The sun is high today."]
    assert stages.prompts == ["What is the time?"]
    order = kinds(timed)
    assert order[:3] == ["transcription.partial"] * 2 + ["transcription.final"]
    assert order.index("audio.chunk") < order.index("llm.done") < order.index("done")
    done = timed[-1][1]
    assert done["type"] == "done"
    assert done["latency"]["stt_ms"] == round(T * 1000)
    assert done["latency"]["first_audio_ms"] == round((T + A + B) * 1000)
    assert done["usage"]["stt_seconds"] == 1.0
    assert trace.response == "It is noon. The sun is high today."
    assert trace.spoken == stages.sentences
    assert stages.all_closed()


async def test_audio_leaves_in_sentence_order_when_a_later_sentence_is_ready_first(
    autojump_clock: trio.abc.Clock,
) -> None:
    llm = [(0.1, "One two three. "), (0.1, "Four five six. "), (0.1, "Seven.")]
    # The first sentence's synthesis is slow (1 s), the second's quick (0.05 s).
    stages = ScriptedStages(stt=[(0.1, "go")], llm=llm, tts_first_s={0: 1.0, 1: 0.05, 2: 0.05})
    timed, _ = await run(stages)

    audio = [(at, event["data"]) for at, event in timed if event["type"] == "audio.chunk"]
    assert [data for _, data in audio] == [
        b"s0p0;",
        b"s0p1;",
        b"s1p0;",
        b"s1p1;",
        b"s2p0;",
        b"s2p1;",
    ]
    # Sentence 1 started at 0.2 and gives bytes at 1.2, its second piece at 1.21; the
    # second sentence's audio, ready since 0.35, follows at once.
    assert audio[0][0] == pytest.approx(1.2)
    assert audio[2][0] == pytest.approx(1.21)
    assert stages.all_closed()


async def test_syntheses_in_flight_are_bounded(autojump_clock: trio.abc.Clock) -> None:
    llm = [(0.01, f"Sentence number {i}. ") for i in range(10)]
    stages = ScriptedStages(stt=[(0.1, "go")], llm=llm, tts_first_s=1.0)
    _, trace = await run(stages)

    assert stages.counters["tts"].opened == 10
    assert stages.counters["tts"].most_live == flow.TTS_IN_FLIGHT
    assert len(trace.spoken) == 10
    assert stages.all_closed()


async def test_cancelling_the_run_closes_every_upstream_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B)
    seen: list[str] = []
    send, receive = trio.open_memory_channel[Event](flow.EVENT_BUFFER)
    with trio.move_on_after(T + A + B + 0.001):  # the client leaves after the first audio
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(run_pipeline, stages, send, speak=True))
            async for event in receive:
                seen.append(event["type"])
    assert trio.current_time() == pytest.approx(T + A + B + 0.001)
    assert "audio.chunk" in seen and "llm.done" not in seen
    assert stages.counters["llm"].opened == 1 and stages.counters["tts"].opened >= 1
    assert stages.all_closed()


@pytest.mark.parametrize("stage", ["stt", "llm", "tts"])
async def test_a_stage_that_cannot_be_served_ends_the_stream_with_an_error(
    autojump_clock: trio.abc.Clock, stage: str
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, fail=stage)
    timed, trace = await run(stages)

    last: dict[str, Any] = timed[-1][1]
    assert last == {
        "type": "error",
        "message": f"every {stage} provider failed",
        "recoverable": False,
    }
    assert "done" not in kinds(timed)
    assert trace.error is not None
    assert stages.all_closed()


async def test_a_stage_served_by_its_fallback_reports_a_recoverable_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, fell_back="llm")
    timed, _ = await run(stages)

    notes = [event for _, event in timed if event["type"] == "error"]
    assert len(notes) == 1 and notes[0]["recoverable"] is True
    assert "vendor-a" in notes[0]["message"]
    assert kinds(timed)[-1] == "done"


async def test_without_speech_no_synthesis_runs(autojump_clock: trio.abc.Clock) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM)
    timed, trace = await run(stages, speak=False)

    assert "audio.chunk" not in kinds(timed)
    assert stages.counters["tts"].opened == 0
    assert trace.response.endswith("today.")


class SlowOpeningEncoder:
    """An encoder whose opening takes `open_s` (virtual): its output is the PCM with a
    header before the first piece and a trailer after the last."""

    def __init__(self, open_s: float) -> None:
        self.open_s = open_s
        self.opened_at: float | None = None
        self.header_sent = False
        self.closed = False

    async def open(self) -> None:
        if self.opened_at is None:
            await trio.sleep(self.open_s)
            self.opened_at = trio.current_time()

    async def feed(self, pcm: bytes) -> bytes:
        await self.open()
        header, self.header_sent = (b"" if self.header_sent else b"HEAD"), True
        return header + pcm

    async def finish(self) -> bytes:
        return b"TAIL"

    def close(self) -> None:
        self.closed = True


async def test_an_encoder_is_opened_while_the_model_writes_and_fed_in_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B)
    encoder = SlowOpeningEncoder(open_s=A)  # as long as the first sentence takes
    timed, trace = await run(stages, encoder=encoder)

    assert encoder.opened_at == pytest.approx(T + A)  # opened from the transcript on
    assert first(timed, "audio.chunk") == pytest.approx(T + A + B)  # not delayed by it
    data = b"".join(event["data"] for _, event in timed if event["type"] == "audio.chunk")
    assert data == b"HEAD" + b"".join(trace.audio) + b"TAIL"
    assert encoder.closed and stages.all_closed()


async def test_a_cancelled_answer_closes_its_encoder(autojump_clock: trio.abc.Clock) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B)
    encoder = SlowOpeningEncoder(open_s=0)
    with trio.move_on_after(T + A + B + 0.01):
        await run(stages, encoder=encoder)
    assert encoder.closed and stages.all_closed()


class BusyEncoder(SlowOpeningEncoder):
    """Each step takes `step_s` (virtual), as an encoder on a loaded machine."""

    def __init__(self, step_s: float) -> None:
        super().__init__(open_s=0)
        self.step_s = step_s
        self.fed: list[bytes] = []

    async def feed(self, pcm: bytes) -> bytes:
        await trio.sleep(self.step_s)
        self.fed.append(pcm)
        return await super().feed(pcm)


async def test_a_busy_encoder_takes_what_piled_up_in_one_step(
    autojump_clock: trio.abc.Clock,
) -> None:
    stages = ScriptedStages(stt=STT, llm=LLM, tts_first_s=B, tts_pieces=6)
    encoder = BusyEncoder(step_s=0.025)  # slower than the pieces arrive
    timed, trace = await run(stages, encoder=encoder)

    assert first(timed, "audio.chunk") == pytest.approx(T + A + B + 0.025)
    assert len(encoder.fed) < len(trace.audio)  # fewer steps than pieces
    assert b"".join(encoder.fed) == b"".join(trace.audio)  # every piece, in order
    data = b"".join(event["data"] for _, event in timed if event["type"] == "audio.chunk")
    assert data == b"HEAD" + b"".join(trace.audio) + b"TAIL"
