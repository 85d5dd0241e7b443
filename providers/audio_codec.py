"""Audio containers: recognise them by their bytes, decode to PCM, encode every speech format.

PyAV (`av`) does the work: its wheels bundle FFmpeg's libraries (libmp3lame, libopus, the
native AAC and FLAC encoders, every demuxer an upload may use), so one well-kept binding
covers all six `response_format` values and every upload type without shelling out to a
program or needing a system package. Everything here is blocking and CPU-bound: callers run
it in a worker thread (`trio.to_thread.run_sync`) under a limiter.

PyAV belongs to the `[audio]` extra (~24 MiB resident once loaded): it is imported by the
functions that use it, so importing this module (every speech adapter does) costs nothing
in a core install, where the audio families are not mounted.

PCM inside the gateway is always 16-bit signed little-endian mono (`bytes`), with its rate
beside it.

PyAV is imported by the first call that decodes, encodes or resamples, not with this
module: the adapters that may call it are imported by every gateway, and FFmpeg's
libraries cost ~24 MiB of resident memory to a gateway that never touches audio.
"""

from __future__ import annotations

import io
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import attrs

from providers.audio_types import PCM_RATE, SpeechFormat

if TYPE_CHECKING:
    import av.audio.stream


class AudioDecodeError(ValueError):
    """The bytes are not audio in a container we accept (empty, truncated, another type)."""


@attrs.frozen(slots=True)
class Pcm:
    """Mono 16-bit little-endian samples at `rate` Hz."""

    samples: bytes = attrs.field(repr=False)
    rate: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / 2 / self.rate


# -- recognising a container by its first bytes --------------------------------------------


def sniff_container(head: bytes) -> str | None:
    """The container the first bytes announce, or None when they announce no audio.

    Names follow the upload types of the spec: `wav`, `mp3`, `flac`, `ogg`, `webm`, `mp4`
    (also m4a), `aac` (ADTS), `mpeg` (an MPEG program stream, the spec's `.mpeg`; an MPEG
    audio file named so is `mp3`). A file name is never consulted: a PNG called `a.wav` is
    a PNG.
    """
    if len(head) < 12:
        return None
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head[:3] == b"ID3":
        return "mp3"
    if head[:4] == b"\x00\x00\x01\xba":  # an MPEG-1/2 program stream's pack header
        return "mpeg"
    return _frame_sync(head)


def _frame_sync(head: bytes) -> str | None:
    """MPEG audio frames start with 11 set bits; layer bits 00 mean ADTS AAC."""
    if head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return None
    return "aac" if head[1] & 0x06 == 0 else "mp3"


# -- decoding ------------------------------------------------------------------------------


def decode(data: bytes | BinaryIO, *, rate: int = 16_000) -> Pcm:
    """All of `data` (bytes, or a reader at the start of a file) as mono PCM at `rate`;
    `AudioDecodeError` for anything not audio.

    Truncated files decode as far as they go; a file with no decodable audio at all is an
    error rather than zero seconds of silence.
    """
    try:
        samples = b"".join(_decoded_frames(data, rate))
    except _decode_failures() as exc:
        raise AudioDecodeError(f"the file could not be decoded as audio: {exc}") from None
    if not samples:
        raise AudioDecodeError("the file holds no audio")
    return Pcm(samples, rate)


def decoded_duration(file: BinaryIO, *, rate: int = 16_000) -> float:
    """The seconds `decode(file, rate=rate)` would give, the same errors included, but
    holding one decoded frame at a time instead of the whole PCM (a 25 MB upload)."""
    try:
        size = sum(len(frame) for frame in _decoded_frames(file, rate))
    except _decode_failures() as exc:
        raise AudioDecodeError(f"the file could not be decoded as audio: {exc}") from None
    if not size:
        raise AudioDecodeError("the file holds no audio")
    return size / 2 / rate


def decoded_frames(data: bytes | BinaryIO, rate: int = 16_000) -> Generator[bytes, None, None]:
    """`data`'s audio as mono PCM at `rate`, a decoded frame at a time (blocking: step it
    in a worker thread); FFmpeg's failures come out as `AudioDecodeError`. Close the
    iterator to release the decoder early."""
    frames = _decoded_frames(data, rate)
    try:
        yield from frames
    except _decode_failures() as exc:
        raise AudioDecodeError(f"the file could not be decoded as audio: {exc}") from None
    finally:
        frames.close()


def _decode_failures() -> tuple[type[Exception], ...]:
    import av.error

    return (av.error.FFmpegError, ValueError, IndexError, StopIteration)


def _decoded_frames(data: bytes | BinaryIO, rate: int) -> Generator[bytes, None, None]:
    import av

    source = io.BytesIO(data) if isinstance(data, bytes) else data
    with av.open(source, mode="r") as container:
        if not container.streams.audio:
            raise ValueError("no audio stream")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                yield bytes(out.planes[0])[: out.samples * 2]
        for out in resampler.resample(None):
            yield bytes(out.planes[0])[: out.samples * 2]


# -- encoding ------------------------------------------------------------------------------

# format -> (muxer, codec, sample rate the codec wants)
_ENCODERS: dict[str, tuple[str, str, int]] = {
    "mp3": ("mp3", "libmp3lame", 24_000),
    "opus": ("ogg", "libopus", 48_000),
    "aac": ("adts", "aac", 24_000),
    "flac": ("flac", "flac", 24_000),
    "wav": ("wav", "pcm_s16le", 24_000),
}


def encode(pcm: Pcm, fmt: SpeechFormat) -> bytes:
    """`pcm` as a complete file in `fmt`; `pcm` is raw 24 kHz s16le as OpenAI sends it."""
    if fmt == "pcm":
        return resample(pcm, PCM_RATE).samples
    import av.audio.stream

    muxer, codec, codec_rate = _ENCODERS[fmt]
    source = resample(pcm, codec_rate)
    sink = io.BytesIO()
    with av.open(sink, mode="w", format=muxer) as container:
        stream = container.add_stream(codec, rate=codec_rate, layout="mono")
        assert isinstance(stream, av.audio.stream.AudioStream)
        for packet in _encode_packets(stream, source):
            container.mux(packet)
    return sink.getvalue()


def _encode_packets(stream: av.audio.stream.AudioStream, pcm: Pcm) -> Iterator[Any]:
    import av

    frame_samples = 4096
    for offset in range(0, len(pcm.samples), frame_samples * 2):
        chunk = pcm.samples[offset : offset + frame_samples * 2]
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk) // 2)
        frame.planes[0].update(chunk)
        frame.sample_rate = pcm.rate
        yield from stream.encode(frame)
    yield from stream.encode(None)


def resample(pcm: Pcm, rate: int) -> Pcm:
    """`pcm` at another rate (FFmpeg's resampler); the same object when the rate matches."""
    if pcm.rate == rate or not pcm.samples:
        return Pcm(pcm.samples, rate) if not pcm.samples else pcm
    import av

    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm.samples) // 2)
    frame.planes[0].update(pcm.samples)
    frame.sample_rate = pcm.rate
    parts = [bytes(f.planes[0])[: f.samples * 2] for f in resampler.resample(frame)]
    parts += [bytes(f.planes[0])[: f.samples * 2] for f in resampler.resample(None)]
    return Pcm(b"".join(parts), rate)


class PcmResampler:
    """PCM16 mono from one rate to another across calls (a stream of pieces): FFmpeg's
    resampler keeps its state between pieces, so no sample is lost or doubled at their
    edges. `flush` gives what it holds back at the end. Cheap enough for the event loop
    (a 20 ms piece is a few hundred samples)."""

    def __init__(self, source: int, target: int) -> None:
        import av

        self.source, self.target = source, target
        self._inner = (
            None
            if source == target
            else av.AudioResampler(format="s16", layout="mono", rate=target)
        )

    def __call__(self, pcm: bytes) -> bytes:
        if self._inner is None or not pcm:
            return pcm
        import av

        frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
        frame.planes[0].update(pcm)
        frame.sample_rate = self.source
        return _joined(self._inner.resample(frame))

    def flush(self) -> bytes:
        """The samples held back for the next piece, now that there is none."""
        return b"" if self._inner is None else _joined(self._inner.resample(None))


def _joined(frames: list[av.AudioFrame]) -> bytes:
    return b"".join(bytes(f.planes[0])[: f.samples * 2] for f in frames)


def codec_for(fmt: SpeechFormat) -> tuple[str, str, int]:
    """(muxer, codec, sample rate) that `encode` uses for `fmt` (not `pcm`), for an
    encoder that writes the same file piece by piece (`gateway.pipelines.encoding`)."""
    return _ENCODERS[fmt]
