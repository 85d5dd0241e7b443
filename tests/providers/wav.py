"""Test audio made without any engine: a square wave as a 16-bit mono WAV of any length."""

from __future__ import annotations

import array
import io
import wave


def square_wave_wav(seconds: float, rate: int = 16_000) -> bytes:
    """A mono 16-bit WAV of a 200 Hz square wave (at 16 kHz), `seconds` long."""
    count = int(seconds * rate)
    samples = array.array("h", (4000 if (i // 40) % 2 else -4000 for i in range(count)))
    sink = io.BytesIO()
    with wave.open(sink, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return sink.getvalue()
