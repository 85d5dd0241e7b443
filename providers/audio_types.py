"""Canonical audio requests and answers shared by every speech adapter.

Speech-to-text and text-to-speech look different at every vendor (multipart uploads,
base64 in JSON, WebSocket frames); the gateway speaks one shape to all of them. Audio
travels as bytes in a known container (`AudioFormat`): uploads are checked by their bytes
before an adapter ever sees them, and synthesised audio is re-encoded by the gateway when a
vendor cannot produce the format the client asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs

from providers.clip_source import ClipSource, as_source

# Containers the gateway produces for speech (the spec's `response_format` values).
SpeechFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
SPEECH_FORMATS: tuple[SpeechFormat, ...] = ("mp3", "opus", "aac", "flac", "wav", "pcm")

# Raw `pcm` is what OpenAI sends for it: 24 kHz, 16-bit signed little-endian, mono.
PCM_RATE = 24_000

CONTENT_TYPES: dict[str, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}


@attrs.frozen(slots=True)
class AudioClip:
    """Audio whose container was recognised from its bytes themselves.

    `container` is one of the sniffed names (`wav`, `mp3`, `flac`, `ogg`, `webm`, `mp4`,
    `aac`); `duration_s` is measured by decoding, not trusted from a header. The bytes stay
    where they are (`source`: an upload's spool file, or memory): adapters stream them
    (`source.pieces()`) or decode them from a reader (`source.open()`), each attempt from
    the start.
    """

    source: ClipSource = attrs.field(converter=as_source, repr=False)
    container: str
    duration_s: float
    filename: str = "audio"

    @property
    def data(self) -> bytes:
        """Every byte at once (blocking, a copy for a spooled clip): only for vendors that
        take the clip inside a JSON body; the others stream `source`."""
        return self.source.read_all()

    @property
    def mime_type(self) -> str:
        return _CONTAINER_MIME.get(self.container, "application/octet-stream")


_CONTAINER_MIME = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "webm": "audio/webm",
    "mp4": "audio/mp4",
    "aac": "audio/aac",
    "mpeg": "video/mpeg",
}


@attrs.frozen(slots=True)
class TranscriptionRequest:
    """What the gateway asks of an upstream speech-to-text model.

    `context_bias` holds at most 100 domain words; `diarize` and `context_bias` reach only
    adapters that support them (the gateway refuses them elsewhere before calling).
    `translate` asks for the speech translated into English text instead of transcribed
    (`POST /v1/audio/translations`); it reaches only adapters that translate. The rest are
    OpenAI's newer options, refused before calling wherever the model cannot honour them:
    `logprobs` (token log probabilities in the answer), `chunking` (how the audio is cut),
    `languages` (the languages the audio may be in) and `known_speakers` (names with a
    reference clip each, for a diarizing model to label its segments by).
    """

    model: str
    audio: AudioClip
    language: str | None = None
    prompt: str | None = None
    temperature: float | None = None
    word_timestamps: bool = False
    diarize: bool = False
    context_bias: tuple[str, ...] = ()
    translate: bool = False
    logprobs: bool = False
    chunking: Chunking | None = None
    languages: tuple[str, ...] = ()
    known_speakers: tuple[KnownSpeaker, ...] = ()


@attrs.frozen(slots=True)
class Chunking:
    """How a recogniser cuts the audio before transcribing: `auto` (the vendor normalises
    loudness and picks boundaries by voice activity), or `server_vad` with its tuning."""

    mode: Literal["auto", "server_vad"]
    prefix_padding_ms: int | None = None
    silence_duration_ms: int | None = None
    threshold: float | None = None


@attrs.frozen(slots=True)
class KnownSpeaker:
    """A speaker a diarizing model may name: a short label and a reference clip of their
    voice as a data URL (`data:audio/wav;base64,...`), sent as the client gave it."""

    name: str
    reference: str = attrs.field(repr=False)


@attrs.frozen(slots=True)
class TokenLogprob:
    """One token of a transcript with its log probability (OpenAI's `logprobs`)."""

    token: str
    logprob: float
    bytes: tuple[int, ...] = ()


@attrs.frozen(slots=True)
class LiveTranscriptionRequest:
    """What the gateway asks of a streaming recogniser: the audio comes as it is spoken
    (raw PCM16 mono at `rate` Hz, in pieces), not as a file; its end is the end of the
    turn."""

    model: str
    rate: int
    language: str | None = None
    prompt: str | None = None


@attrs.frozen(slots=True)
class Word:
    word: str
    start: float
    end: float
    speaker: str | None = None


@attrs.frozen(slots=True)
class Segment:
    """A stretch of recognised speech; the scores default to what Whisper reports when a
    vendor gives none (`avg_logprob` 0, `no_speech_prob` 0)."""

    id: int
    start: float
    end: float
    text: str
    speaker: str | None = None
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0


@attrs.frozen(slots=True)
class TranscriptionResult:
    """A finished transcription; `duration_s` is the audio's length, the billed quantity."""

    text: str
    language: str | None
    duration_s: float
    segments: Sequence[Segment] = ()
    words: Sequence[Word] = ()
    logprobs: Sequence[TokenLogprob] = ()


@attrs.frozen(slots=True)
class TranscriptDelta:
    """A piece of text recognised so far in a streamed transcription; `segment` when the
    piece is a whole finished segment of a diarizing model (with its speaker and times)."""

    text: str
    segment: Segment | None = None


@attrs.frozen(slots=True)
class TranscriptDone:
    """The end of a streamed transcription, with the whole result."""

    result: TranscriptionResult


TranscriptEvent = TranscriptDelta | TranscriptDone


@attrs.frozen(slots=True)
class VoiceSettings:
    """ElevenLabs-style voice controls; vendors without them ignore them."""

    stability: float | None = None
    similarity_boost: float | None = None
    style: float | None = None
    speed: float | None = None
    use_speaker_boost: bool | None = None


@attrs.frozen(slots=True)
class SpeechRequest:
    """What the gateway asks of an upstream text-to-speech model.

    `voice` is already the vendor's own voice id (standard voices and mappings resolved).
    """

    model: str
    input: str
    voice: str
    response_format: SpeechFormat = "mp3"
    speed: float = 1.0
    voice_settings: VoiceSettings | None = None
    instructions: str | None = None  # how to speak (OpenAI's gpt-4o-mini-tts; others ignore it)


@attrs.frozen(slots=True)
class SpeechAudio:
    """Synthesised audio; `format` says what the bytes really are (the gateway re-encodes
    when it differs from the request's)."""

    data: bytes = attrs.field(repr=False)
    format: SpeechFormat
    characters: int
