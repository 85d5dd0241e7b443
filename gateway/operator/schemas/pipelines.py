"""Voice pipelines: `POST /v1/audio/pipelines` (multipart or JSON; whole or NDJSON events)
and the management API of custom pipeline templates."""

from __future__ import annotations

from gateway.operator.apidoc import (
    BOOL,
    NUM,
    STR,
    STRS,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    deleted,
    listing,
    nullable,
    obj,
    query,
)

TAG = "pipelines"
TEMPLATES_TAG = "pipeline-templates"
PIPELINE_ERRORS = (400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 504)
TEMPLATE_ERRORS = (400, 401, 403, 404, 408, 413, 422, 429)
INT: Schema = {"type": "integer"}
SPEED: Schema = {"type": "number", "minimum": 0.25, "maximum": 4.0}

TEXT: Schema = {"type": "string", "minLength": 1}
OVERRIDES = nullable(
    closed(
        llm=nullable(
            closed(
                model=nullable(TEXT),
                max_tokens=nullable({"type": "integer", "minimum": 1, "maximum": 4096}),
            )
        ),
        tts=nullable(closed(voice=nullable(TEXT), speed=nullable(SPEED))),
    )
)
PIPELINE_JSON = obj(
    ("audio", "template"),
    audio={
        "type": "string",
        "minLength": 1,
        "contentEncoding": "base64",
        "description": "the audio as base64 (25 MB decoded at most), or a data: URL",
    },
    template=TEXT | {"description": "a built-in template id, or a custom one's id or name"},
    context=nullable({"type": "string", "maxLength": 8000}),
    stream=BOOL,
    overrides=OVERRIDES,
)
PIPELINE_FORM = obj(
    ("audio", "template"),
    audio={"type": "string", "format": "binary"},
    template=TEXT,
    context={"type": "string", "maxLength": 8000},
    stream={"enum": ["true", "false"]},
    overrides=OVERRIDES | {"description": "sent as the JSON text of the object"},
)
USAGE = all_required(
    stt_seconds=NUM,
    llm_tokens=all_required(prompt=INT, completion=INT),
    tts_characters=INT,
)
LATENCY = obj(
    ("stt_ms", "llm_ms", "tts_ms", "total_ms"),
    stt_ms=INT,
    llm_ms=INT,
    tts_ms=INT,
    total_ms=INT,
    first_audio_ms=INT,
)
PROVIDERS = all_required(stt=nullable(STR), llm=nullable(STR), tts=nullable(STR))
NOTE = all_required(
    chief_complaint=nullable(STR),
    duration=nullable(STR),
    symptoms=STRS,
    medications_mentioned=STRS,
    allergies_mentioned=STRS,
    vital_signs=nullable({"type": "object"}),
)
RESULT = {
    "anyOf": [
        obj(
            ("id", "transcription", "response", "audio", "audio_format", "usage", "latency"),
            id=STR,
            object={"const": "audio.pipeline"},
            template=STR,
            transcription=STR,
            response=STR,
            audio=nullable(STR),
            audio_format=nullable(STR),
            usage=USAGE,
            latency=LATENCY,
            providers=PROVIDERS,
        ),
        obj(
            ("id", "transcription", "structured_note", "pii_detected", "audit_id", "compliance"),
            id=STR,
            object={"const": "audio.pipeline"},
            template=STR,
            transcription=STR,
            structured_note=NOTE,
            pii_detected=arr(all_required(type=STR, value=STR, confidence=NUM)),
            audit_id=nullable(STR),
            compliance=all_required(hipaa=BOOL, audit_logged=BOOL),
            usage=USAGE,
            latency=LATENCY,
            providers=PROVIDERS,
        ),
    ]
}
EVENT = obj(
    ("type",),
    type={
        "enum": [
            "transcription.partial",
            "transcription.final",
            "llm.token",
            "llm.done",
            "audio.chunk",
            "done",
            "error",
        ]
    },
    text=STR,
    token=STR,
    data={
        "type": "string",
        "description": "base64 audio: the chunks of one answer join into one file in the "
        "template's format (`pcm`: PCM16, 24 kHz, mono)",
    },
    audio_format={"enum": ["mp3", "opus", "aac", "flac", "wav", "pcm"]},
    sample_rate=INT,
    usage=USAGE,
    latency=LATENCY,
    message=STR,
    recoverable=BOOL,
)

PIPELINE = Operation(
    "Run a voice pipeline: speech in, the language model, speech out",
    TAG,
    RESULT,
    request=PIPELINE_JSON,
    errors=PIPELINE_ERRORS,
    alternatives=(
        (
            "application/x-ndjson",
            {
                "type": "string",
                "description": "With `stream`: one JSON event per line",
                "x-event-schema": EVENT,
            },
        ),
    ),
    description="multipart/form-data with an `audio` file is accepted too (fields as in the "
    "JSON body, `overrides` as JSON text). Streamed `audio.chunk` data of one answer "
    "concatenates into one file in the template's `tts.format` (`done` says `audio_format` "
    "and `sample_rate`).",
)

STAGES: dict[str, Schema] = dict(
    stt=obj(("model",), model=STR, language=STR),
    llm=obj(
        ("model",),
        model=STR,
        system_prompt={"type": "string", "maxLength": 8000},
        max_tokens={"type": "integer", "minimum": 1, "maximum": 4096},
        temperature={"type": "number", "minimum": 0, "maximum": 2},
    ),
    tts=nullable(
        obj(
            ("model", "voice"),
            model=STR,
            voice=STR,
            speed=SPEED,
            format={"enum": ["mp3", "opus", "aac", "flac", "wav", "pcm"]},
        )
    ),
)
STAGES_IN: dict[str, Schema] = dict(
    stt=closed(
        ("model",),
        model={"type": "string", "minLength": 1},
        language=nullable({"type": "string", "minLength": 2, "maxLength": 10}),
    ),
    llm=closed(
        ("model",),
        model={"type": "string", "minLength": 1},
        system_prompt=nullable({"type": "string", "maxLength": 8000}),
        max_tokens={"type": "integer", "minimum": 1, "maximum": 4096},
        temperature=nullable({"type": "number", "minimum": 0, "maximum": 2}),
    ),
    tts=nullable(
        closed(
            ("model", "voice"),
            model={"type": "string", "minLength": 1},
            voice={"type": "string", "minLength": 1},
            speed=SPEED,
            format={"enum": ["mp3", "opus", "aac", "flac", "wav", "pcm"]},
        )
    )
    | {"description": "null: a template whose answer is text only"},
)
DESCRIPTION: Schema = nullable({"type": "string", "maxLength": 500})
TEMPLATE_NAME: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "pattern": "^[A-Za-z0-9][A-Za-z0-9 ._-]*$",
}
TEMPLATE = obj(
    ("id", "object", "name", "kind", "builtin", "stt", "llm", "tts"),
    id=STR,
    object={"const": "pipeline_template"},
    name=STR,
    kind={"enum": ["agent", "scribe", "legal"]},
    description=STR,
    builtin=BOOL,
    created_at=nullable({"type": "string", "format": "date-time"}),
    updated_at={"type": "string", "format": "date-time"},
    **STAGES,
)

TEMPLATE_OPERATIONS = {
    "pipelines.create_template": Operation(
        "Create a custom pipeline template",
        TEMPLATES_TAG,
        TEMPLATE,
        status=201,
        request=closed(
            ("name", "stt", "llm", "tts"), name=TEMPLATE_NAME, description=DESCRIPTION, **STAGES_IN
        ),
        errors=(*TEMPLATE_ERRORS, 409),
    ),
    "pipelines.list_templates": Operation(
        "The built-in templates and the workspace's own",
        TEMPLATES_TAG,
        listing(TEMPLATE, templates=arr(TEMPLATE)),
        errors=TEMPLATE_ERRORS,
    ),
    "pipelines.get_template": Operation(
        "One pipeline template (built-in or custom)",
        TEMPLATES_TAG,
        TEMPLATE,
        errors=TEMPLATE_ERRORS,
    ),
    "pipelines.update_template": Operation(
        "Change a custom template: the fields given",
        TEMPLATES_TAG,
        TEMPLATE,
        request=closed((), name=TEMPLATE_NAME, description=DESCRIPTION, **STAGES_IN),
        errors=(*TEMPLATE_ERRORS, 409),
    ),
    "pipelines.update_template PUT": Operation(
        "Replace a custom template: every field",
        TEMPLATES_TAG,
        TEMPLATE,
        request=closed(
            ("name", "stt", "llm", "tts"), name=TEMPLATE_NAME, description=DESCRIPTION, **STAGES_IN
        ),
        errors=(*TEMPLATE_ERRORS, 409),
    ),
    "pipelines.delete_template": Operation(
        "Delete a custom template",
        TEMPLATES_TAG,
        deleted("pipeline_template"),
        errors=TEMPLATE_ERRORS,
    ),
}

SESSION = Operation(
    "A live voice session: upgrade to a WebSocket (JSON events, PCM16 audio both ways)",
    TAG,
    None,
    status=101,
    body_required=False,
    query=(
        query("template", STR, "a template id or name (default `voice-agent-fast`)"),
        query("context", STR, "added to the template's system prompt"),
        query("input_audio_format", STR, "`pcm16` (default), `g711_ulaw` or `g711_alaw`"),
        query("sample_rate", STR, "PCM16's rate: 8000, 16000 (default), 24000 or 48000"),
    ),
    errors=(400, 401, 404, 426),
    description="A WebSocket handshake is answered 101 Switching Protocols; a plain GET "
    "(no upgrade) is refused with 426. The same session core as `GET /v1/realtime` "
    "(docs/realtime.md), in this endpoint's protocol. Client events: `session.update`, "
    "`input_audio_buffer.append` (base64 PCM16 "
    "mono at the session's rate), `input_audio_buffer.commit`, `input_audio_buffer.clear`, "
    "`response.cancel`. Gateway events: `session.created`, `input_audio_buffer.speech_started`"
    ", `speech_stopped`, `committed`, `transcription.partial`/`final`, `response.created`, "
    "`response.text.delta`, `response.audio.delta` (PCM16 24 kHz), `response.done`, `error`. "
    "A session that cannot start sends one `error` event and closes with 4000 + the HTTP "
    "status (4401, 4404, 4429).",
)

REALTIME = Operation(
    "A Realtime session: the OpenAI Realtime protocol over a WebSocket, answered by a cascade",
    "realtime",
    None,
    status=101,
    body_required=False,
    query=(
        query("model", STR, "a realtime model id (`gpt-realtime`...) or a pipeline template"),
        query("intent", STR, "`transcription` for a transcription session"),
    ),
    errors=(400, 401, 403, 404, 426),
    description="The OpenAI Realtime protocol (GA event names; the beta names with "
    "`OpenAI-Beta: realtime=v1`), the key in `Authorization: Bearer` or the "
    "`openai-insecure-api-key.<key>` subprotocol. Speech-to-text, the language model and "
    "text-to-speech of a pipeline template, each through the engine; see docs/realtime.md. "
    "A session that cannot start sends one `error` event and closes with 4000 + the HTTP "
    "status.",
)

OPERATIONS = {
    "pipelines.pipelines": PIPELINE,
    "realtime.sessions": SESSION,
    "realtime.realtime": REALTIME,
    **TEMPLATE_OPERATIONS,
}
