"""The session's audio formats: what a client sends, turned into the 16 kHz PCM16 that
voice-activity detection and recognition read, and the answer's 24 kHz PCM16 turned into
what the client asked for.

PCM16 at any of the rates the session accepts is resampled by FFmpeg's resampler
(PyAV), one resampler per direction and session so that no sample is lost between
messages; G.711 (`audio/pcmu`, `audio/pcma`, 8 kHz) is decoded and encoded by FFmpeg's
`pcm_mulaw` / `pcm_alaw` codecs (the standard library's `audioop` is gone in 3.13).
Pure but for the codec state each object holds; cheap enough for the event loop (a
20 ms frame is 320 samples).

PyAV is the `[audio]` extra's, as is this family: imported by the functions that use it,
so that importing the family's modules (the registry does) loads nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from gateway.realtime.config import AudioFormat
from providers.audio_codec import PcmResampler

if TYPE_CHECKING:
    import av
    import av.audio.codeccontext

WORK_RATE = 16_000  # what the VAD and recognition read
SPEECH_RATE = 24_000  # what the speech stage gives
G711_CODECS = {"audio/pcmu": "pcm_mulaw", "audio/pcma": "pcm_alaw"}


class AudioFormatError(ValueError):
    """The bytes are not audio of the session's format."""


def _frame(pcm: bytes, rate: int) -> av.AudioFrame:
    import av

    frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
    frame.planes[0].update(pcm)
    frame.sample_rate = rate
    return frame


def _samples(frames: list[av.AudioFrame]) -> bytes:
    return b"".join(bytes(f.planes[0])[: f.samples * 2] for f in frames)


def _codec(
    name: str, mode: Literal["r", "w"], rate: int
) -> av.audio.codeccontext.AudioCodecContext:
    import av
    import av.audio.codeccontext

    context = cast(av.audio.codeccontext.AudioCodecContext, av.CodecContext.create(name, mode))
    context.sample_rate = rate
    context.layout = "mono"
    return context


class InputAudio:
    """A client's audio in its format -> PCM16 mono at `WORK_RATE`."""

    def __init__(self, fmt: AudioFormat) -> None:
        self.format = fmt
        codec = G711_CODECS.get(fmt.type)
        self._decoder: av.audio.codeccontext.AudioCodecContext | None = None
        if codec is not None:
            self._decoder = _codec(codec, "r", fmt.rate)
        self._resample = PcmResampler(fmt.rate, WORK_RATE)

    def decode(self, data: bytes) -> bytes:
        if self._decoder is None:
            if len(data) % 2:
                raise AudioFormatError("PCM16 audio comes in whole 2-byte samples.")
            return self._resample(data)
        import av

        frames = self._decoder.decode(av.Packet(data))
        return self._resample(_samples(list(frames)))


class OutputAudio:
    """The answer's PCM16 mono at `SPEECH_RATE` -> the client's format."""

    def __init__(self, fmt: AudioFormat) -> None:
        self.format = fmt
        codec = G711_CODECS.get(fmt.type)
        self._encoder: av.audio.codeccontext.AudioCodecContext | None = None
        if codec is not None:
            self._encoder = _codec(codec, "w", fmt.rate)
            self._encoder.format = "s16"
            self._encoder.open()
        self._resample = PcmResampler(SPEECH_RATE, fmt.rate)

    def encode(self, pcm: bytes) -> bytes:
        resampled = self._resample(pcm)
        if self._encoder is None or not resampled:
            return resampled
        packets = self._encoder.encode(_frame(resampled, self.format.rate))
        return b"".join(bytes(p) for p in packets)

    def seconds(self, encoded: bytes) -> float:
        """How long `encoded` (this format's bytes) plays."""
        width = 2 if self._encoder is None else 1
        return len(encoded) / width / self.format.rate
