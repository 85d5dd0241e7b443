"""The declared shapes of transcriptions, translations and speech: the forms and bodies
they read and the answers they build, from which the OpenAPI document is written
(`gateway.platform.shapes`).

The forms and the speech body are read by hand (`gateway.audio.input`: a form's `service`
comes as JSON text or as bracketed parts, its flags as text); the bounds and choices below
are that parser's own constants, so the two cannot drift apart in a number, and the
schemathesis run (tests/operator/test_fuzz.py) holds them to each other in shape.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

import attrs

from gateway.audio.form_options import DATA_URL_PATTERN, INCLUDES, MAX_KNOWN_SPEAKERS
from gateway.audio.input import (
    GRANULARITIES,
    MAX_CONTEXT_BIAS_WORDS,
    MAX_SPEECH_CHARACTERS,
    MAX_SPEED,
    MIN_SPEED,
    PREFERENCES,
    TRANSCRIPTION_FORMATS,
    TRANSLATION_FORMATS,
)
from gateway.platform.shapes import (
    NON_BLANK,
    NOT_NULL,
    Choices,
    Count,
    Doc,
    Format,
    Length,
    Pattern,
    Range,
    accepts_more,
    together,
)
from gateway.upstream.options import Model, ServiceRequest
from providers.audio_types import SPEECH_FORMATS

Prefer = Annotated[str, Choices(PREFERENCES), Doc("What `auto` ranks the models by")]
Unit = Annotated[float, Range(least=0.0, most=1.0)]
Speed = Annotated[float, Range(least=MIN_SPEED, most=MAX_SPEED)]

# -- transcriptions and translations (multipart forms) ------------------------------------


@accepts_more
@attrs.frozen
class AudioServiceRequest(ServiceRequest):
    """A transcription's `service`: the options of every model request, and `prefer`."""

    prefer: Prefer | None = None


# Form fields are text: a flag is `true` or `false` (any case); an empty field is left out.
FormFlag = Annotated[str | None, Pattern("^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"), NOT_NULL]
FormService = Annotated[
    AudioServiceRequest | None,
    NOT_NULL,
    Doc("Sent as the JSON text of the object, or as `service[<field>]` parts"),
]
AudioFile = Annotated[
    str,
    Format("binary"),
    Length(least=1),
    Doc("mp3, mp4, mpeg, mpga, m4a, wav, webm, flac, ogg (by content); 25 MB"),
]
TextFormat = Annotated[
    str | None,
    Choices(TRANSCRIPTION_FORMATS),
    NOT_NULL,
    Doc(
        "`json` `{text}`, `verbose_json` (segments, words), `text`, `srt`, `vtt` or "
        "`diarized_json` (segments by speaker)"
    ),
]
TranslationFormat = Annotated[
    str | None,
    Choices(TRANSLATION_FORMATS),
    NOT_NULL,
    Doc("`json` `{text}`, `verbose_json` (segments), `text`, `srt` or `vtt`"),
]
Language = Annotated[str, Pattern("^[a-z]{2}$", "an ISO-639-1 code such as 'en'")]
Words = Annotated[list[Annotated[str, NON_BLANK]] | None, NOT_NULL]
Milliseconds = Annotated[int | None, Range(least=0), NOT_NULL]


@attrs.frozen(kw_only=True)
class ServerVad:
    """`chunking_strategy` tuned by hand: voice activity detection on the vendor's side."""

    type: Literal["server_vad"]
    prefix_padding_ms: Milliseconds = None
    silence_duration_ms: Milliseconds = None
    threshold: Annotated[float | None, Range(least=0.0, most=1.0), NOT_NULL] = None


ChunkingStrategy = Annotated[
    Literal["auto"] | ServerVad | None,
    NOT_NULL,
    Doc(
        "How the audio is cut (the gpt-4o transcribe models); required by "
        "gpt-4o-transcribe-diarize above 30 s"
    ),
]
Temperature = Annotated[float | None, Range(least=0.0, most=1.0), NOT_NULL]

# Word and segment timings come with `verbose_json` only.
TIMINGS_NEED_VERBOSE_JSON = {
    "if": {
        "required": ["timestamp_granularities"],
        "properties": {"timestamp_granularities": {"type": "array", "minItems": 1}},
    },
    "then": {
        "required": ["response_format"],
        "properties": {"response_format": {"const": "verbose_json"}},
    },
}


# Log probabilities come with `json` only (the default format).
LOGPROBS_NEED_JSON = {
    "if": {
        "required": ["include"],
        "properties": {"include": {"type": "array", "minItems": 1}},
    },
    "then": {"properties": {"response_format": {"const": "json"}}},
}


@together(TIMINGS_NEED_VERBOSE_JSON, LOGPROBS_NEED_JSON)
@attrs.frozen(kw_only=True)
class TranscriptionParts:
    """The parts of a transcription upload (multipart/form-data)."""

    file: AudioFile
    model: Model
    language: Annotated[
        str | None, Pattern("^[a-z]{2}$", "an ISO-639-1 code such as 'en'"), NOT_NULL
    ] = None
    prompt: Annotated[str | None, NOT_NULL] = None
    response_format: TextFormat = None
    temperature: Temperature = None
    timestamp_granularities: Annotated[
        list[Annotated[str, Choices(GRANULARITIES)]] | None,
        NOT_NULL,
        Doc("`word`, `segment`: with `verbose_json` only"),
    ] = None
    stream: Annotated[FormFlag, Doc("`true`: server-sent events, the text as it comes")] = None
    diarize: Annotated[FormFlag, Doc("Speakers told apart (Mistral's Voxtral only)")] = None
    context_bias: Annotated[
        str | None,
        NOT_NULL,
        Doc(f"Comma-separated words, at most {MAX_CONTEXT_BIAS_WORDS} with `keywords`"),
    ] = None
    include: Annotated[
        list[Annotated[str, Choices(INCLUDES)]] | None,
        NOT_NULL,
        Doc("`logprobs`: with `json`, gpt-4o-transcribe and gpt-4o-mini-transcribe"),
    ] = None
    chunking_strategy: ChunkingStrategy = None
    keywords: Annotated[
        Words,
        Count(most=MAX_CONTEXT_BIAS_WORDS),
        Doc("Words to favour (gpt-transcribe; Voxtral's context_bias)"),
    ] = None
    languages: Annotated[
        list[Language] | None, NOT_NULL, Doc("Possible languages (gpt-transcribe)")
    ] = None
    known_speaker_names: Annotated[
        list[Annotated[str, NON_BLANK]] | None,
        Count(most=MAX_KNOWN_SPEAKERS),
        NOT_NULL,
        Doc("Speaker labels (gpt-4o-transcribe-diarize), one reference each"),
    ] = None
    known_speaker_references: Annotated[
        list[Annotated[str, Pattern(DATA_URL_PATTERN, "a base64 data URL of audio")]] | None,
        Count(most=MAX_KNOWN_SPEAKERS),
        NOT_NULL,
        Doc("2-10 s of each known speaker's voice, as data URLs"),
    ] = None
    service: FormService = None


@attrs.frozen(kw_only=True)
class TranslationParts:
    """The parts of a translation upload (multipart/form-data); a transcription's other
    fields (`language`, `timestamp_granularities`, `stream`, ...) are refused."""

    file: AudioFile
    model: Annotated[str, NON_BLANK, Doc("whisper-1, a Gemini transcription model, or `auto`")]
    prompt: Annotated[str | None, NOT_NULL] = None
    response_format: TranslationFormat = None
    temperature: Temperature = None
    service: FormService = None


class TokenLogprob(TypedDict):
    token: str
    logprob: float
    bytes: list[int]


class TranscriptionText(TypedDict):
    """The `json` answer (`logprobs` when `include[]=logprobs` was asked)."""

    text: str
    logprobs: NotRequired[list[TokenLogprob]]


class SpeakerSegment(TypedDict):
    """A stretch of one speaker (`unknown` where the vendor did not attribute it)."""

    type: Literal["transcript.text.segment"]
    id: str
    start: float
    end: float
    speaker: str
    text: str


class TranscriptionSegment(TypedDict):
    """A stretch of the clip (Whisper's neutral values where the vendor reports none)."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: list[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    speaker: NotRequired[str]


class TranscriptionWord(TypedDict):
    word: str
    start: float
    end: float
    speaker: NotRequired[str]


class TranscriptionVerbose(TypedDict):
    """The `verbose_json` answer: segments always, words when `word` timing was asked
    (a translation's language is always english)."""

    task: Literal["transcribe", "translate"]
    language: str
    duration: float
    text: str
    segments: list[TranscriptionSegment]
    words: NotRequired[list[TranscriptionWord]]


class TranscriptUsage(TypedDict):
    type: Literal["duration"]
    seconds: int


class TranscriptionDiarized(TypedDict):
    """The `diarized_json` answer (OpenAI's `TranscriptionDiarized`)."""

    task: Literal["transcribe"]
    duration: float
    text: str
    segments: list[SpeakerSegment]
    usage: TranscriptUsage


class TranscriptEventError(TypedDict):
    code: str
    message: str


class TranscriptEvent(TypedDict):
    """One event of a streamed transcription (`data: <event>`): `transcript.text.delta`
    events (`transcript.text.segment` ones for `diarized_json`), then one
    `transcript.text.done` (or an `error` after the stream began)."""

    type: Literal[
        "transcript.text.delta", "transcript.text.segment", "transcript.text.done", "error"
    ]
    delta: NotRequired[str]
    text: NotRequired[str]
    id: NotRequired[str]
    start: NotRequired[float]
    end: NotRequired[float]
    speaker: NotRequired[str]
    logprobs: NotRequired[list[TokenLogprob]]
    usage: NotRequired[TranscriptUsage]
    error: NotRequired[TranscriptEventError]


# -- speech --------------------------------------------------------------------------------


@accepts_more
@attrs.frozen
class SpeechVoiceSettings:
    """ElevenLabs-style voice controls; vendors without them ignore them."""

    stability: Unit | None = None
    similarity_boost: Unit | None = None
    style: Unit | None = None
    speed: Speed | None = None
    use_speaker_boost: bool | None = None


@accepts_more
@attrs.frozen
class SpeechServiceRequest(ServiceRequest):
    """Speech's `service`: the options of every model request, voice settings and
    `prefer`."""

    voice_settings: SpeechVoiceSettings | None = None
    prefer: Prefer | None = None


# SSE is a stream: `stream_format: sse` with `stream: false` is refused.
SSE_IS_A_STREAM = {
    "not": {
        "required": ["stream", "stream_format"],
        "properties": {"stream": {"const": False}, "stream_format": {"const": "sse"}},
    }
}


@together(SSE_IS_A_STREAM)
@accepts_more
@attrs.frozen
class SpeechBody:
    """A speech request (OpenAI's body, with the gateway's `service`)."""

    model: Model
    input: Annotated[str, NON_BLANK, Length(most=MAX_SPEECH_CHARACTERS)]
    voice: Annotated[
        str, NON_BLANK, Doc("A provider voice id, a standard voice id, or a voice mapping's name")
    ]
    response_format: Annotated[str, Choices(SPEECH_FORMATS)] | None = None
    speed: Speed | None = None
    stream: Annotated[bool | None, Doc("true unless false: the answer streams")] = None
    stream_format: Annotated[str, Choices(("audio", "sse"))] | None = None
    instructions: Annotated[str | None, Doc("How to speak (OpenAI's gpt-4o-mini-tts)")] = None
    service: SpeechServiceRequest | None = None


class SpeechUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class SpeechEvent(TypedDict):
    """One event of `stream_format: sse` (`data: <event>`): `speech.audio.delta` with a
    piece of the audio (base64, in `response_format`), then `speech.audio.done`."""

    type: Literal["speech.audio.delta", "speech.audio.done"]
    audio: NotRequired[str]
    usage: NotRequired[SpeechUsage]
