"""The audio family: transcriptions and translations (multipart), speech (fast path,
audio bodies), the voice catalog and its previews, and workspace voice mappings.

Audio endpoints answer a vendor's failure with 500 `provider_error` (the spec's status for
them, `gateway.kernels.voice.errors`), so 500 is a documented answer here, not only a bug.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    BOOL,
    MODEL,
    NUM,
    STR,
    Operation,
    Schema,
    all_required,
    arr,
    filled,
    header,
    nullable,
    obj,
)
from gateway.operator.schemas.components import SERVICE_REQUEST

TAG = "audio"
# Upstream-backed operations: 500/503/504 upstream (a body that is not multipart is a 400).
UPSTREAM_ERRORS = (400, 401, 403, 404, 408, 413, 429, 503, 504)

BINARY: Schema = {"type": "string", "format": "binary"}
TEXT_BODY: Schema = {"type": "string"}
SPEECH_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
SPEECH_MEDIA_TYPES = ("audio/mpeg", "audio/opus", "audio/aac", "audio/flac", "audio/wav")
PREFER: Schema = {"enum": ["quality", "speed", "cost"]}
UNIT: Schema = {"type": "number", "minimum": 0, "maximum": 1}
SPEED: Schema = {"type": "number", "minimum": 0.25, "maximum": 4.0}

# -- transcriptions ------------------------------------------------------------------------

SEGMENT = obj(
    ("id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob"),
    id={"type": "integer"},
    seek={"type": "integer"},
    start=NUM,
    end=NUM,
    text=STR,
    tokens=arr({"type": "integer"}),
    temperature=NUM,
    avg_logprob=NUM,
    compression_ratio=NUM,
    no_speech_prob=NUM,
    speaker=STR,
)

TRANSCRIPTION = {
    "anyOf": [
        all_required(text=STR),
        obj(
            ("task", "language", "duration", "text", "segments"),
            task={"const": "transcribe"},
            language=STR,
            duration=NUM,
            text=STR,
            segments=arr(SEGMENT),
            words=arr(obj(("word", "start", "end"), word=STR, start=NUM, end=NUM, speaker=STR)),
        ),
    ]
}

TRANSLATION = {
    "anyOf": [
        all_required(text=STR),
        obj(
            ("task", "language", "duration", "text", "segments"),
            task={"const": "translate"},
            language={"const": "english"},
            duration=NUM,
            text=STR,
            segments=arr(SEGMENT),
        ),
    ]
}

TRANSCRIPTION_EVENT = obj(
    ("type",),
    type={"enum": ["transcript.text.delta", "transcript.text.done", "error"]},
    delta=STR,
    text=STR,
    usage=obj(type={"const": "duration"}, seconds={"type": "integer"}),
    error=obj(code=STR, message=STR),
)

AUDIO_FILE: Schema = {
    **BINARY,
    "description": "mp3, mp4, mpeg, mpga, m4a, wav, webm, flac, ogg; 25 MB",
}

# Sent as the JSON text of the object (or as `service[prefer]`-style fields).
SERVICE_FORM: Schema = {
    "allOf": [SERVICE_REQUEST, obj(prefer=nullable(PREFER))],
    "description": "sent as the JSON text of the object",
}

# Word and segment timings come with `verbose_json` only.
TIMINGS_NEED_VERBOSE_JSON: Schema = {
    "if": {
        "required": ["timestamp_granularities"],
        "properties": {"timestamp_granularities": {"type": "array", "minItems": 1}},
    },
    "then": {
        "required": ["response_format"],
        "properties": {"response_format": {"const": "verbose_json"}},
    },
}

TRANSCRIPTION_FORM = obj(
    ("file", "model"),
    file=AUDIO_FILE,
    model=MODEL,
    language={"type": "string", "pattern": "^[a-z]{2}$"},
    prompt=STR,
    response_format={"enum": ["json", "text", "srt", "verbose_json", "vtt"]},
    temperature={"type": "number", "minimum": 0, "maximum": 1},
    timestamp_granularities=arr({"enum": ["word", "segment"]}),
    stream={"enum": ["true", "false"]},
    diarize={"enum": ["true", "false"]},
    context_bias={"type": "string", "description": "comma-separated words, at most 100"},
    service=SERVICE_FORM,
)

TRANSLATION_FORM = obj(
    ("file", "model"),
    file=AUDIO_FILE,
    model=filled(description="whisper-1, a Gemini transcription model, or `auto`"),
    prompt=STR,
    response_format={"enum": ["json", "text", "srt", "verbose_json", "vtt"]},
    temperature={"type": "number", "minimum": 0, "maximum": 1},
    service=SERVICE_FORM,
)

SERVICE_HEADERS = (
    header("X-Service-Project", "project id for usage records"),
    header("X-Service-Team", "team id for usage records"),
    header("X-Service-Trace-Id", "a trace id of the caller's"),
)

# The `text`, `srt` and `vtt` answers of transcriptions and translations.
TEXT_ALTERNATIVES = (
    ("text/plain", TEXT_BODY),
    ("application/x-subrip", TEXT_BODY),
    ("text/vtt", TEXT_BODY),
)

TRANSCRIPTIONS = Operation(
    "Transcribe an audio file (multipart), whole or streamed",
    TAG,
    TRANSCRIPTION,
    request=TRANSCRIPTION_FORM | TIMINGS_NEED_VERBOSE_JSON,
    request_media_type="multipart/form-data",
    errors=UPSTREAM_ERRORS,
    alternatives=(
        *TEXT_ALTERNATIVES,
        (
            "text/event-stream",
            {
                "type": "string",
                "description": "With `stream=true`: `data: <event>` lines, "
                "`transcript.text.delta` events then one `transcript.text.done`",
                "x-event-schema": TRANSCRIPTION_EVENT,
            },
        ),
    ),
    headers=SERVICE_HEADERS,
    description="`response_format` chooses the body: `json` `{text}`, `verbose_json` "
    "(segments, words), `text`, `srt` or `vtt`.",
)

TRANSLATIONS = Operation(
    "Translate speech in an audio file into English text (multipart)",
    TAG,
    TRANSLATION,
    request=TRANSLATION_FORM,
    request_media_type="multipart/form-data",
    errors=UPSTREAM_ERRORS,
    alternatives=TEXT_ALTERNATIVES,
    headers=SERVICE_HEADERS,
    description="OpenAI's whisper-1 and Gemini translate; Mistral's Voxtral and the offline "
    "`local` model do not (a 400 when named, left out of fallbacks). `language`, "
    "`timestamp_granularities`, `stream`, `diarize` and `context_bias` are a 400.",
)

# -- speech --------------------------------------------------------------------------------

SPEECH_REQUEST = obj(
    ("model", "input", "voice"),
    model=MODEL,
    input={"type": "string", "minLength": 1, "maxLength": 4096},
    voice=filled(description="a provider voice id, a standard voice id, or a voice mapping's name"),
    response_format={"enum": list(SPEECH_FORMATS)},
    speed=SPEED,
    stream=nullable(BOOL) | {"description": "true unless false: the answer streams"},
    stream_format={"enum": ["audio", "sse"]},
    instructions={"type": "string", "description": "how to speak (OpenAI's gpt-4o-mini-tts)"},
    service=nullable(
        {
            "allOf": [
                SERVICE_REQUEST,
                obj(
                    voice_settings=obj(
                        stability=UNIT,
                        similarity_boost=UNIT,
                        style=UNIT,
                        speed=SPEED,
                        use_speaker_boost=BOOL,
                    ),
                    prefer=nullable(PREFER),
                ),
            ]
        }
    ),
)

SSE_SPEECH: Schema = {
    "type": "string",
    "description": "`data: {type: speech.audio.delta, audio: <base64>}` lines, then "
    "`speech.audio.done` with `usage`",
}

# SSE is a stream: `stream_format: sse` with `stream: false` is refused.
NOT_SSE_UNSTREAMED: Schema = {
    "not": {
        "required": ["stream", "stream_format"],
        "properties": {"stream": {"const": False}, "stream_format": {"const": "sse"}},
    }
}

SPEECH = Operation(
    "Speak a text; the body is audio in `response_format`, streamed unless `stream: false`",
    TAG,
    BINARY,
    request=SPEECH_REQUEST | NOT_SSE_UNSTREAMED,
    media_type="audio/mpeg",
    alternatives=(
        *((t, BINARY) for t in (*SPEECH_MEDIA_TYPES[1:], "audio/pcm")),
        ("text/event-stream", SSE_SPEECH),
    ),
    errors=UPSTREAM_ERRORS,
    headers=SERVICE_HEADERS,
    description="Streamed by default, as OpenAI's speech is (chunked, the first bytes as "
    "soon as the vendor's); `stream: false` answers whole. `stream_format: sse` gives "
    "OpenAI's `speech.audio.delta`/`speech.audio.done` events. Headers of the answer: "
    "`Content-Length` (not when streamed), `X-Service-Provider`, `X-Service-Model`, "
    "`X-Service-Latency-Ms`. Raw `pcm` is 24 kHz 16-bit signed little-endian mono.",
)

OPERATIONS = {
    "audio.transcriptions": TRANSCRIPTIONS,
    "audio.translations": TRANSLATIONS,
    "fast.audio_speech": SPEECH,
}
