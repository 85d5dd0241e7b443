"""`python -m bench.voice [--pipelines 50] [--chart PATH]`: the voice pipeline's figures.

1. Time to first audio against the critical path of its stages: 50 pipelines at once,
   each with scripted stages on the real clock (recognition final after `STT_S`, the
   model's first sentence `FIRST_SENTENCE_S` after that, synthesis's first bytes
   `TTS_FIRST_S` after the sentence). The critical path is their sum; what the pipeline
   adds is the measured time to first audio minus it (target: 20 ms at p50, 50 ms at p99).
2. The sequential baseline of the same stages: recognise, wait for the whole answer,
   synthesise it, so the first audio comes after the whole model answer.
3. (folded into 4)
4. Realtime sessions on the session core (`gateway.realtime`), 1 and 50 at once on the
   same scripted stages, recognition streamed while the user speaks (the final
   transcript `LIVE_FINAL_S` after the VAD's stop): from the end of the user's speech to
   the first audio delta, over the critical path (VAD stop -> STT final -> the model's
   first sentence -> speech's first byte; target: +20 ms at p50, +50 ms at p99); from the
   speech of a barge-in to `response.done` cancelled (target: under 50 ms at p99); and the
   largest lead of the audio sent over real time (bounded by `realtime_audio_lead_s`).

The stages are scripted in process (the pipeline's own orchestration is what is
measured, not the vendors' latency or HTTP); `tests/gateway/pipelines/test_flow.py`
proves the same at exact virtual times.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from gateway.kernels.voice.flow import EVENT_BUFFER, Event, Opened, run_pipeline
from gateway.kernels.voice.session import LanguageModel
from gateway.pipelines.encoding import ThreadedEncoder
from gateway.pipelines.metered import Metered
from gateway.realtime.config import SessionConfig, TurnDetection
from gateway.realtime.events import Dialect
from gateway.realtime.session import RealtimeSession, SessionClosed
from gateway.upstream.limits import Unlimited
from providers.audio_types import (
    SPEECH_FORMATS,
    AudioClip,
    SpeechFormat,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionResult,
)
from streams.handoff import items
from streams.tape import Tape

STT_S = 0.200
FIRST_SENTENCE_S = 0.150  # model: the first sentence's last word arrives this long after
TOKEN_S = 0.010  # between words
TTS_FIRST_S = 0.120
SENTENCES = ("Sure, I can help with that.", "Your table is booked for seven.", "Anything else?")
CRITICAL_S = STT_S + FIRST_SENTENCE_S + TTS_FIRST_S
# A realtime session recognises while the user speaks: its final transcript is ready
# this long after the VAD's stop (a streaming recogniser's last word), not `STT_S`.
LIVE_FINAL_S = 0.050
REALTIME_CRITICAL_S = LIVE_FINAL_S + FIRST_SENTENCE_S + TTS_FIRST_S
LEAD_S = 1.5  # the setting's default (`realtime_audio_lead_s`)
# 100 ms of a 440 Hz tone, PCM16 24 kHz: one piece of synthesis (not silence, which
# encoders make cheaply).
PIECE = b"".join(
    int(8000 * math.sin(2 * math.pi * 440 * n / 24_000)).to_bytes(2, "little", signed=True)
    for n in range(2400)
)


class BenchStages:
    """Scripted stages on the real clock; they note when they handed each item over, so
    the pipeline's own hand-offs can be told apart from the stages' (and the loaded
    machine's sleep overshoot)."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}

    def _mark(self, name: str) -> None:
        self.marks.setdefault(name, trio.current_time())

    @asynccontextmanager
    async def transcribe(self) -> AsyncIterator[Opened[TranscriptEvent]]:
        async with aclosing(self._final()) as items:
            yield Opened(items, "bench")

    async def _final(self) -> AsyncGenerator[TranscriptEvent, None]:
        await trio.sleep(STT_S)
        self._mark("stt_final")
        yield TranscriptDone(TranscriptionResult("Book a table.", "en", 1.0))

    @asynccontextmanager
    async def complete(self, transcript: str) -> AsyncIterator[Opened[str]]:
        self._mark("llm_started")
        async with aclosing(self._tokens()) as items:
            yield Opened(items, "bench")

    async def _tokens(self) -> AsyncGenerator[str, None]:
        words = [w + " " for sentence in SENTENCES for w in sentence.split(" ")]
        first = len(SENTENCES[0].split(" "))
        await trio.sleep(FIRST_SENTENCE_S - TOKEN_S * (first - 1))
        for index, word in enumerate(words):
            if index:
                await trio.sleep(TOKEN_S)
            if index == first - 1:
                self._mark("first_sentence")
            yield word

    @asynccontextmanager
    async def speak(self, sentence: str) -> AsyncIterator[Opened[bytes]]:
        self._mark("tts_started")
        async with aclosing(self._audio()) as items:
            yield Opened(items, "bench")

    async def _audio(self) -> AsyncGenerator[bytes, None]:
        await trio.sleep(TTS_FIRST_S)
        self._mark("tts_first")
        for _ in range(4):
            yield PIECE
            await trio.sleep(0.02)

    def voice_line(self) -> None:
        """Sentence by sentence (the socket per answer is not what this measures)."""
        return None

    def usage(self) -> Mapping[str, Any]:
        return {}


class CountedEncoder(ThreadedEncoder):
    """The streaming encoder, counting its trips to a worker thread."""

    hops = 0

    async def open(self) -> None:
        CountedEncoder.hops += self._encoder is None
        await super().open()

    async def feed(self, pcm: bytes) -> bytes:
        CountedEncoder.hops += 1
        return await super().feed(pcm)

    async def finish(self) -> bytes:
        CountedEncoder.hops += 1
        return await super().finish()


async def first_audio(sequential: bool, fmt: SpeechFormat = "pcm") -> tuple[float, float]:
    """Seconds from the start until the first audio of one pipeline, and how much of it
    the pipeline's own hand-offs took (STT final -> model, sentence -> synthesis, first
    bytes -> event)."""
    started = trio.current_time()
    stages = BenchStages()
    if sequential:
        return await _sequential(stages, started), 0.0
    send, receive = trio.open_memory_channel[Event](EVENT_BUFFER)
    first: float | None = None
    async with trio.open_nursery() as nursery:
        encoder = CountedEncoder(fmt) if fmt != "pcm" else None
        nursery.start_soon(lambda: run_pipeline(stages, send, speak=True, encoder=encoder))
        async with receive:
            async for event in items(receive):  # as the NDJSON body reads them
                if event["type"] == "audio.chunk" and first is None:
                    first = trio.current_time()
    assert first is not None
    m = stages.marks
    handoffs = (
        (m["llm_started"] - m["stt_final"])
        + (m["tts_started"] - m["first_sentence"])
        + (first - m["tts_first"])
    )
    return first - started, handoffs


async def _sequential(stages: BenchStages, started: float) -> float:
    async with stages.transcribe() as stt:
        async for _ in stt.items:
            break
    async with stages.complete("") as llm:
        answer = "".join([token async for token in llm.items])
    async with stages.speak(answer) as tts:
        async for _ in tts.items:
            return trio.current_time() - started
    raise AssertionError("no audio")


async def concurrent(
    count: int, sequential: bool, stagger_s: float = 0.0, fmt: SpeechFormat = "pcm"
) -> list[tuple[float, float]]:
    """`count` pipelines at once; with `stagger_s`, their starts spread evenly over that
    long (every one still overlaps all the others when it is shorter than a pipeline),
    as callers arrive, instead of in lockstep (every stage of every pipeline waking in
    the same loop iteration: the worst case for a single event loop). With `fmt`, each
    pipeline streams its audio in that format (one encoder each, in worker threads)."""
    results: list[tuple[float, float]] = []

    async def one(delay: float) -> None:
        await trio.sleep(delay)
        results.append(await first_audio(sequential, fmt))

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(one, stagger_s * index / count)
    return results


class Work(trio.abc.Instrument):
    """Counts the event loop's work while installed: task steps (each a scheduler
    round trip) and tasks started, so a change can be shown by counting, not only
    by timing on a shared machine."""

    def __init__(self) -> None:
        self.steps = 0
        self.tasks = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.tasks += 1


async def counted(
    count: int, stagger_s: float, fmt: SpeechFormat = "pcm"
) -> tuple[list[tuple[float, float]], dict[str, float]]:
    """`concurrent` overlapped pipelines, with the loop's work, the encoders' thread
    hops and the process's CPU (threads included) per pipeline."""
    work = Work()
    CountedEncoder.hops = 0
    trio.lowlevel.add_instrument(work)
    cpu = time.process_time()
    try:
        runs = await concurrent(count, sequential=False, stagger_s=stagger_s, fmt=fmt)
    finally:
        trio.lowlevel.remove_instrument(work)
    per = {
        "task_steps": round(work.steps / count, 1),
        "tasks": round(work.tasks / count, 1),
        "thread_hops": round(CountedEncoder.hops / count, 1),
        "cpu_ms": round((time.process_time() - cpu) * 1000 / count, 2),
    }
    return runs, per


class _Socket:
    """A client that notes when each event of interest reached its socket."""

    def __init__(self) -> None:
        self.send_in, self._in = trio.open_memory_channel[str](64)
        self.marks: dict[str, float] = {}
        self.audio: list[tuple[float, float]] = []  # (when, seconds of audio)
        self.changed = trio.Event()

    async def receive(self) -> str:
        try:
            return await self._in.receive()
        except trio.EndOfChannel:
            raise SessionClosed from None

    async def send(self, data: str) -> None:
        event = json.loads(data)
        kind, now = event["type"], trio.current_time()
        if kind == "response.output_audio.delta":
            self.audio.append((now, len(base64.b64decode(event["delta"])) / 2 / 24_000))
        if kind == "response.done":
            kind = f"response.done.{event['response']['status']}"
        self.marks.setdefault(kind, now)
        self.changed.set()
        self.changed = trio.Event()

    async def until(self, kind: str) -> float:
        with trio.fail_after(10):
            while kind not in self.marks:
                await self.changed.wait()
        return self.marks[kind]

    async def append(self, pcm: bytes) -> None:
        audio = base64.b64encode(pcm).decode()
        await self.send_in.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))


class LongStages(BenchStages):
    """Speech of two seconds a sentence, so the pacing has something to hold back."""

    metered = Metered()

    async def _audio(self) -> AsyncGenerator[bytes, None]:
        await trio.sleep(TTS_FIRST_S)
        self._mark("tts_first")
        for _ in range(20):
            yield PIECE
            await trio.sleep(0.005)


class BenchCascade:
    """The session core's stages, scripted on the real clock (see `BenchStages`)."""

    llm = LanguageModel("bench", "You are a voice assistant.")

    def transcribe(self, clip: AudioClip) -> Any:
        return BenchStages().transcribe()

    @asynccontextmanager
    async def transcribe_live(self, tape: Tape) -> AsyncIterator[Opened[TranscriptEvent]]:
        """A streaming recogniser: it hears the turn as it comes (follows the tape), and
        its final is ready `LIVE_FINAL_S` after the turn's end."""
        async with aclosing(self._live_final(tape)) as items:
            yield Opened(items, "bench")

    async def _live_final(self, tape: Tape) -> AsyncGenerator[TranscriptEvent, None]:
        async for _piece in tape.follow():
            pass
        await trio.sleep(LIVE_FINAL_S)
        yield TranscriptDone(TranscriptionResult("Book a table.", "en", 1.0))

    def response(self, body: dict[str, Any], calls: Any) -> Any:
        return LongStages()

    @asynccontextmanager
    async def admitted(self, response: Any, prompt: int, most: int) -> AsyncIterator[Any]:
        yield Unlimited()


SPOKEN = b"\x10\x10" * (24_000 // 5)  # 200 ms of "speech" at 24 kHz
QUIET = bytes(24_000 * 2 * 6 // 10)  # 600 ms of silence: the VAD ends the turn


async def realtime_turn(lead_s: float = LEAD_S) -> dict[str, float]:
    """One Realtime session on the core: a spoken turn, its answer until a second of
    audio was sent, then a barge-in. The figures: VAD stop -> first audio delta, barge-in
    (speech heard) -> `response.done` cancelled, and the largest lead of the audio over
    real time."""

    async def replan(config: SessionConfig) -> Any:
        raise AssertionError("not replanned")

    socket = _Socket()
    config = SessionConfig(kind="realtime", model="bench", turn_detection=TurnDetection())
    session = RealtimeSession(
        socket,
        Dialect(),
        config,
        BenchCascade(),
        replan,
        classifier_for=lambda vad: lambda frame: frame.count(0) < len(frame) // 2,
        lead_s=lead_s,
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await socket.append(SPOKEN + QUIET)
        stopped = await socket.until("input_audio_buffer.speech_stopped")
        final = await socket.until("conversation.item.input_audio_transcription.completed")
        first = await socket.until("response.output_audio.delta")
        await trio.sleep(1.0)
        del socket.marks["input_audio_buffer.speech_started"]  # the barge-in's, next
        await socket.append(SPOKEN)
        heard = await socket.until("input_audio_buffer.speech_started")
        cancelled = await socket.until("response.done.cancelled")
        nursery.cancel_scope.cancel()
    return {
        "added_s": first - stopped - REALTIME_CRITICAL_S,
        "stt_final_s": final - stopped,
        "barge_in_s": cancelled - heard,
        "lead_s": _largest_lead(socket.audio),
    }


def _largest_lead(audio: list[tuple[float, float]]) -> float:
    """How far the audio sent ran ahead of real time (from the first piece), at most."""
    if not audio:
        return 0.0
    start, sent, lead = audio[0][0], 0.0, 0.0
    for at, seconds in audio:
        sent += seconds
        lead = max(lead, sent - (at - start))
    return lead


async def realtime_sessions(count: int) -> list[dict[str, float]]:
    """`count` sessions at once, their turns spread over 200 ms as callers speak."""
    results: list[dict[str, float]] = []

    async def one(delay: float) -> None:
        await trio.sleep(delay)
        results.append(await realtime_turn())

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(one, 0.2 * index / count)
    return results


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def main(
    count: int, chart: Path | None, stagger_s: float = 0.0, fmt: SpeechFormat = "pcm"
) -> dict[str, Any]:
    runs, per_pipeline = await counted(count, stagger_s, fmt)
    overlapped = [t for t, _ in runs]
    baseline = [t for t, _ in await concurrent(count, sequential=True, stagger_s=stagger_s)]
    realtime = {n: await realtime_sessions(n) for n in (1, 50)}
    added = [(t - CRITICAL_S) * 1000 for t in overlapped]
    handoffs = [h * 1000 for _, h in runs]
    figures = {
        "pipelines": count,
        "stagger_ms": round(stagger_s * 1000),
        "format": fmt,
        "per_pipeline": per_pipeline,
        "critical_path_ms": round(CRITICAL_S * 1000, 1),
        "first_audio_ms": {
            "p50": round(percentile(overlapped, 0.5) * 1000, 1),
            "p99": round(percentile(overlapped, 0.99) * 1000, 1),
        },
        "handoffs_ms": {
            "p50": round(percentile(handoffs, 0.5), 2),
            "p99": round(percentile(handoffs, 0.99), 2),
        },
        "added_ms": {
            "p50": round(percentile(added, 0.5), 1),
            "p99": round(percentile(added, 0.99), 1),
        },
        "sequential_first_audio_ms": {
            "p50": round(percentile(baseline, 0.5) * 1000, 1),
            "p99": round(percentile(baseline, 0.99) * 1000, 1),
        },
        "realtime": {str(n): _realtime_figures(runs) for n, runs in realtime.items()},
    }
    if chart is not None:
        _chart(overlapped, baseline, chart)
    return figures


def _realtime_figures(runs: list[dict[str, float]]) -> dict[str, Any]:
    """Section 4: VAD stop -> first audio over the critical path (target +20 ms p50,
    +50 ms p99), barge-in -> cancelled (target under 50 ms p99), the audio's lead."""

    def ms(key: str, fraction: float) -> float:
        return round(percentile([r[key] for r in runs], fraction) * 1000, 1)

    return {
        "sessions": len(runs),
        "critical_path_ms": round(REALTIME_CRITICAL_S * 1000, 1),
        "speech_end_to_stt_final_ms": {
            "p50": ms("stt_final_s", 0.5),
            "p99": ms("stt_final_s", 0.99),
        },
        "speech_end_to_first_audio_added_ms": {
            "p50": ms("added_s", 0.5),
            "p99": ms("added_s", 0.99),
        },
        "barge_in_to_cancelled_ms": {"p50": ms("barge_in_s", 0.5), "p99": ms("barge_in_s", 0.99)},
        "largest_audio_lead_ms": ms("lead_s", 1.0),
        "lead_setting_ms": round(LEAD_S * 1000),
    }


def _chart(overlapped: list[float], baseline: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.hist([t * 1000 for t in overlapped], bins=30, label="overlapped pipeline")
    ax.hist([t * 1000 for t in baseline], bins=30, label="sequential stages")
    ax.axvline(CRITICAL_S * 1000, color="black", linestyle="--", label="critical path")
    ax.set_xlabel("time to first audio (ms)")
    ax.set_ylabel("pipelines")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=50)
    parser.add_argument("--chart", type=Path, default=None)
    parser.add_argument(
        "--stagger-ms", type=float, default=0.0, help="spread the starts over this long"
    )
    parser.add_argument(
        "--format", default="pcm", choices=SPEECH_FORMATS, help="the streamed audio's format"
    )
    args = parser.parse_args()
    figures = trio.run(main, args.pipelines, args.chart, args.stagger_ms / 1000, args.format)
    json.dump(figures, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    cli()
