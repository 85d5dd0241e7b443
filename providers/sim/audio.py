"""Simulated audio shared by the vendors' simulators: real speech, deterministic text.

Speech is synthesised by eSpeak NG (the local engine) and encoded in the asked format, so
a client decoding the simulator's answer gets valid audio of the text. A transcription is
deterministic: it names the audio's measured length, so tests and benchmarks know what
each stage "heard" without a recogniser in the loop. Blocking work runs in a worker
thread under the limiter of the simulator's `SimAudio`, which owns its own engine.
"""

from __future__ import annotations

import trio
from python_multipart.multipart import MultipartParser, parse_options_header

from providers.audio_codec import AudioDecodeError, decode, encode, resample
from providers.audio_types import SpeechFormat
from providers.local.espeak import LazyEspeak

STREAM_PIECE = 4096
AUDIO_THREADS = 2


class SimAudio:
    """The simulator's speech engine and the limiter of its blocking work; one per
    `SimServer`, handed to the vendor handlers through their context."""

    def __init__(self, threads: int = AUDIO_THREADS) -> None:
        self._engine = LazyEspeak()
        self._limiter = trio.CapacityLimiter(threads)

    async def synthesise(self, text: str, fmt: SpeechFormat, *, speed: float = 1.0) -> bytes:
        """`text` spoken and encoded as `fmt`; cancellation abandons the thread's result."""

        def work() -> bytes:
            return encode(self._engine().synthesize(text, speed=speed), fmt)

        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    async def synthesise_timed(
        self, text: str, fmt: SpeechFormat, rate: int
    ) -> tuple[bytes, float]:
        """`text` spoken and encoded as `fmt` (raw `pcm` at `rate` Hz), with the speech's
        length in seconds (for alignment timings); cancellation abandons the result."""

        def work() -> tuple[bytes, float]:
            pcm = self._engine().synthesize(text)
            data = resample(pcm, rate).samples if fmt == "pcm" else encode(pcm, fmt)
            return data, pcm.duration_s

        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    async def measured_seconds(self, data: bytes) -> float | None:
        """The audio's length by decoding it; None when it is not audio."""

        def work() -> float | None:
            try:
                return decode(data).duration_s
            except AudioDecodeError:
                return None

        return await trio.to_thread.run_sync(work, limiter=self._limiter)


def heard(seconds: float) -> str:
    """What the simulated recogniser hears in `seconds` of audio."""
    return f"This is a simulated transcription of {seconds:.1f} seconds of audio."


def translated(seconds: float) -> str:
    """What the simulated recogniser answers when asked for an English translation."""
    return f"This is a simulated English translation of {seconds:.1f} seconds of audio."


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + STREAM_PIECE] for i in range(0, len(data), STREAM_PIECE)]


def parse_form(content_type: str, body: bytes) -> tuple[dict[str, list[str]], bytes | None]:
    """Text fields and the `file` part of a multipart body (the simulator holds it whole)."""
    _, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if not boundary:
        return {}, None
    fields: dict[str, list[str]] = {}
    state: dict[str, object] = {"name": "", "file": False, "data": bytearray(), "disp": b""}
    found: list[bytes] = []
    header = {"field": b"", "value": b""}

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header["field"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header["value"] += data[start:end]

    def on_header_end() -> None:
        if header["field"].lower() == b"content-disposition":
            state["disp"] = header["value"]
        header["field"], header["value"] = b"", b""

    def on_headers_finished() -> None:
        _, opts = parse_options_header(state["disp"])  # type: ignore[arg-type]
        state["name"] = opts.get(b"name", b"").decode()
        state["file"] = b"filename" in opts
        state["data"] = bytearray()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        state["data"] += data[start:end]  # type: ignore[operator]

    def on_part_end() -> None:
        value = bytes(state["data"])  # type: ignore[call-overload]
        if state["file"]:
            found.append(value)
        else:
            fields.setdefault(str(state["name"]), []).append(value.decode("utf-8", "replace"))

    parser = MultipartParser(
        boundary,
        {
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    parser.write(body)
    parser.finalize()
    return fields, (found[0] if found else None)
