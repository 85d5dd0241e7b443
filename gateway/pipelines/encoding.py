"""Streamed speech in the template's format: one encoder per answer, fed PCM in order.

Each sentence is synthesised on its own, so encoding each one as a file would give
pieces that do not join (every MP3 or Ogg piece its own header and padding). A
`StreamEncoder` is one FFmpeg container (PyAV, as `providers.audio_codec`) writing into
a sink that cannot seek: it is fed the answer's PCM16 24 kHz in sentence order and
hands back whatever encoded bytes the container wrote meanwhile, so the concatenation
of every piece (the `audio.chunk` events of one stream) is one valid file. A container
that would go back to fix its header writes the streaming form instead (WAV with the
"unknown length" sizes 0xFFFFFFFF, FLAC with total samples 0, MP3 without a Xing
table); Ogg pages are cut every 20 ms rather than every second, so Opus audio leaves
as it is encoded.

Encoding is CPU work: `ThreadedEncoder` runs each step in a worker thread (trio's
default thread limiter, shared with the rest of the gateway, not one lock for all
pipelines), one step at a time per answer, so pipelines encode side by side while the
event loop goes on.

PyAV belongs to the `[audio]` extra: it is imported when an encoder is made, so that
importing this module costs nothing where the audio families are not installed.
"""

from __future__ import annotations

from typing import Any

import trio

from providers.audio_codec import codec_for
from providers.audio_types import PCM_RATE, SpeechFormat

OGG_PAGE_US = 20_000  # an Ogg page per 20 ms of audio (FFmpeg's default is 1 s)


class _Sink:
    """What the container writes to: collects the bytes until taken; cannot seek."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


class StreamEncoder:
    """One file in `fmt` (not `pcm`), written as PCM16 mono 24 kHz arrives (blocking)."""

    def __init__(self, fmt: SpeechFormat) -> None:
        import av
        import av.audio.stream

        muxer, codec, rate = codec_for(fmt)
        self._sink = _Sink()
        options = {"page_duration": str(OGG_PAGE_US)} if muxer == "ogg" else {}
        self._container: Any = av.open(self._sink, mode="w", format=muxer, options=options)
        stream = self._container.add_stream(codec, rate=rate, layout="mono")
        assert isinstance(stream, av.audio.stream.AudioStream)
        self._stream = stream
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
        self._closed = False

    def feed(self, pcm: bytes) -> bytes:
        """Encode `pcm` (whole samples); the file's bytes written meanwhile (maybe none
        yet: an encoder holds a frame's worth)."""
        import av

        frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
        frame.planes[0].update(pcm)
        frame.sample_rate = PCM_RATE
        self._encode(self._resampler.resample(frame))
        return self._sink.take()

    def finish(self) -> bytes:
        """The rest of the file: what the resampler and the encoder held, the trailer."""
        self._encode(self._resampler.resample(None))
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self.close()
        return self._sink.take()

    def close(self) -> None:
        """Free the container (after `finish`, or when the answer was cancelled)."""
        if not self._closed:
            self._closed = True
            self._container.close()

    def _encode(self, frames: list[Any]) -> None:
        for frame in frames:
            for packet in self._stream.encode(frame):
                self._container.mux(packet)


class ThreadedEncoder:
    """A `StreamEncoder` whose steps run in a worker thread (see the module docstring);
    what `gateway.kernels.voice.flow` calls."""

    def __init__(self, fmt: SpeechFormat) -> None:
        self.format = fmt
        self.sample_rate = codec_for(fmt)[2]
        self._encoder: StreamEncoder | None = None

    async def open(self) -> None:
        """Open the container and the codec (milliseconds of CPU: FLAC's and Opus's
        most), before the first audio arrives."""
        if self._encoder is None:
            self._encoder = await trio.to_thread.run_sync(StreamEncoder, self.format)

    async def feed(self, pcm: bytes) -> bytes:
        await self.open()
        assert self._encoder is not None
        return await trio.to_thread.run_sync(self._encoder.feed, pcm)

    async def finish(self) -> bytes:
        if self._encoder is None:
            return b""  # no audio at all: no file
        return await trio.to_thread.run_sync(self._encoder.finish)

    def close(self) -> None:
        if self._encoder is not None:
            self._encoder.close()
