"""Validation of the audio requests into attrs types: pure, no I/O.

Speech arrives as a JSON body; transcription as multipart form fields (strings, with the
file already spooled and checked by `gateway.kernels.uploads.spooled`). The `service` extension of a
multipart request comes either as one JSON-encoded field (`service={"prefer":...}`) or
flattened the way the official clients encode nested `extra_body` objects in forms
(`service[prefer]=speed`, `service[fallbacks][]=whisper-1`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import attrs
import orjson

from gateway.audio import form_options
from gateway.platform.errors import invalid_request
from gateway.platform.params import body_object, optional_string, required_string
from gateway.upstream.options import ServiceOptions, parse_service
from providers.audio_types import (
    SPEECH_FORMATS,
    Chunking,
    KnownSpeaker,
    SpeechFormat,
    VoiceSettings,
)

MAX_SPEECH_CHARACTERS = 4096
MIN_SPEED, MAX_SPEED = 0.25, 4.0
MAX_CONTEXT_BIAS_WORDS = 100
PREFERENCES = ("quality", "speed", "cost")
TRANSCRIPTION_FORMATS = ("json", "text", "srt", "verbose_json", "vtt", "diarized_json")
TRANSLATION_FORMATS = TRANSCRIPTION_FORMATS[:-1]  # a translation has no speakers
GRANULARITIES = ("word", "segment")
_LANGUAGE = re.compile(r"^[a-z]{2}$")

Prefer = Literal["quality", "speed", "cost"]


@attrs.frozen
class SpeechParams:
    model: str
    input: str
    voice: str
    response_format: SpeechFormat
    speed: float
    stream: bool
    service: ServiceOptions
    prefer: Prefer | None = None
    voice_settings: VoiceSettings | None = None
    speed_given: bool = False  # `speed` was in the body (a mapping's default yields to it)
    # How a streamed answer is written: the audio bytes themselves, or OpenAI's server-sent
    # events (`speech.audio.delta` with base64 audio, then `speech.audio.done`).
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None


def with_mapping_defaults(params: SpeechParams, defaults: Mapping[str, Any]) -> SpeechParams:
    """`params` with a voice mapping's `default_settings` filling what the request left
    out: `speed` (unless `speed` or `service.voice_settings.speed` was given) and
    `stability` (unless `service.voice_settings.stability` was). Pure."""
    chosen = params.voice_settings or VoiceSettings()
    speed = params.speed
    if "speed" in defaults and not params.speed_given and chosen.speed is None:
        speed = float(defaults["speed"])
    if "stability" in defaults and chosen.stability is None:
        chosen = attrs.evolve(chosen, stability=float(defaults["stability"]))
    settings = chosen if chosen != VoiceSettings() else params.voice_settings
    return attrs.evolve(params, speed=speed, voice_settings=settings)


@attrs.frozen
class TranscriptionParams:
    model: str
    response_format: str
    language: str | None = None
    prompt: str | None = None
    temperature: float | None = None
    granularities: tuple[str, ...] = ()
    stream: bool = False
    diarize: bool = False
    context_bias: tuple[str, ...] = ()
    service: ServiceOptions = attrs.field(factory=ServiceOptions)
    prefer: Prefer | None = None
    translate: bool = False  # POST /v1/audio/translations: English text, whole
    logprobs: bool = False  # include[]=logprobs
    chunking: Chunking | None = None
    keywords: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    known_speakers: tuple[KnownSpeaker, ...] = ()

    @property
    def words(self) -> bool:
        return "word" in self.granularities

    @property
    def speakers(self) -> bool:
        """Speakers told apart: `diarize`, or `diarized_json` (an answer by speaker)."""
        return self.diarize or self.response_format == "diarized_json"

    @property
    def domain_words(self) -> tuple[str, ...]:
        """`context_bias` and `keywords` together: the words each vendor favours under its
        own name (Voxtral's `context_bias`, gpt-transcribe's `keywords[]`)."""
        return self.context_bias + tuple(w for w in self.keywords if w not in self.context_bias)


# -- speech --------------------------------------------------------------------------------


def parse_speech(body: Any) -> SpeechParams:
    """A speech request's body, or a 400 naming the first bad field."""
    data = body_object(body)
    text = required_string(data, "input")
    if len(text) > MAX_SPEECH_CHARACTERS:
        raise invalid_request(
            f"'input' is {len(text)} characters; the maximum is {MAX_SPEECH_CHARACTERS}.",
            param="input",
        )
    raw_service = data.get("service")
    stream_format = cast(
        Literal["audio", "sse"], _choice(data, "stream_format", ("audio", "sse"), "audio")
    )
    instructions = data.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid_request("'instructions' must be a string.", param="instructions")
    # Streamed unless the client says `stream: false`, as OpenAI's speech is; SSE is a stream.
    stream = data.get("stream") is None or _flag(data.get("stream"), "stream")
    if stream_format == "sse" and not stream:
        raise invalid_request(
            "'stream_format' 'sse' is a stream: leave out 'stream' or set it true.",
            param="stream_format",
        )
    return SpeechParams(
        model=required_string(data, "model"),
        input=text,
        voice=required_string(data, "voice"),
        response_format=cast(SpeechFormat, _choice(data, "response_format", SPEECH_FORMATS, "mp3")),
        speed=_number(data.get("speed"), "speed", MIN_SPEED, MAX_SPEED, default=1.0),
        stream=stream,
        stream_format=stream_format,
        instructions=instructions or None,
        speed_given=data.get("speed") is not None,
        service=parse_service(raw_service),
        prefer=_prefer(raw_service),
        voice_settings=_voice_settings(raw_service),
    )


def _voice_settings(service: Any) -> VoiceSettings | None:
    raw = service.get("voice_settings") if isinstance(service, dict) else None
    if raw is None:
        return None
    where = "service.voice_settings"
    if not isinstance(raw, dict):
        raise invalid_request(f"'{where}' must be an object.", param=where, value=raw)
    return VoiceSettings(
        stability=_optional_number(raw.get("stability"), f"{where}.stability", 0.0, 1.0),
        similarity_boost=_optional_number(
            raw.get("similarity_boost"), f"{where}.similarity_boost", 0.0, 1.0
        ),
        style=_optional_number(raw.get("style"), f"{where}.style", 0.0, 1.0),
        speed=_optional_number(raw.get("speed"), f"{where}.speed", MIN_SPEED, MAX_SPEED),
        use_speaker_boost=_optional_flag(
            raw.get("use_speaker_boost"), f"{where}.use_speaker_boost"
        ),
    )


def _optional_flag(value: Any, name: str) -> bool | None:
    """The voice detail's `settings` shows `use_speaker_boost`, so a request may set it."""
    if value is None or isinstance(value, bool):
        return value
    raise invalid_request(f"'{name}' must be a boolean.", param=name, value=value)


def _prefer(service: Any) -> Prefer | None:
    value = service.get("prefer") if isinstance(service, dict) else None
    if value is None:
        return None
    if value not in PREFERENCES:
        raise invalid_request(
            f"'service.prefer' must be one of {', '.join(PREFERENCES)}.",
            param="service.prefer",
            value=value,
        )
    return cast(Prefer, value)


# -- transcription -------------------------------------------------------------------------


def parse_transcription(form: Mapping[str, Sequence[str]]) -> TranscriptionParams:
    """The text fields of a transcription upload (each name to its values, in order); a
    400 naming a field that is no field of a transcription."""
    form_options.refuse_unknown(form)
    fields = {name: values[-1] for name, values in form.items() if values}
    service = _form_service(form)
    response_format = _choice(fields, "response_format", TRANSCRIPTION_FORMATS, "json")
    granularities = _granularities(form, response_format)
    keywords = form_options.listed(form, "keywords")
    _check_word_count(len(_context_bias(fields.get("context_bias"))) + len(keywords))
    return TranscriptionParams(
        model=required_string(fields, "model"),
        response_format=response_format,
        language=_language(fields.get("language")),
        prompt=optional_string(fields, "prompt"),
        temperature=_optional_number(_float_text(fields, "temperature"), "temperature", 0.0, 1.0),
        granularities=granularities,
        stream=_flag(fields.get("stream"), "stream"),
        diarize=_flag(fields.get("diarize"), "diarize"),
        context_bias=_context_bias(fields.get("context_bias")),
        service=parse_service(service),
        prefer=_prefer(service),
        logprobs=form_options.includes_logprobs(form, response_format),
        chunking=form_options.chunking(form),
        keywords=keywords,
        languages=form_options.languages(form),
        known_speakers=form_options.known_speakers(form),
    )


# OpenAI's translations take only these of a transcription's fields: the answer is
# always English text, whole.
TRANSLATION_FIELDS = frozenset({"model", "response_format", "prompt", "temperature"})
NOT_IN_TRANSLATIONS = form_options.TRANSCRIPTION_FIELDS - TRANSLATION_FIELDS


def parse_translation(form: Mapping[str, Sequence[str]]) -> TranscriptionParams:
    """The text fields of a translation upload: a transcription's, without the fields a
    translation cannot honour (a 400 naming the first one sent with a value)."""
    for name, values in form.items():
        field = form_options.field_name(name)
        if field in NOT_IN_TRANSLATIONS and any(values):
            raise invalid_request(
                f"'{field}' is not a parameter of translations: they answer English text, "
                "whole, from audio in any language.",
                param=field,
            )
    fields = {name: values[-1] for name, values in form.items() if values}
    _choice(fields, "response_format", TRANSLATION_FORMATS, "json")
    return attrs.evolve(parse_transcription(form), translate=True)


def _granularities(form: Mapping[str, Sequence[str]], response_format: str) -> tuple[str, ...]:
    values = [*form.get("timestamp_granularities[]", ()), *form.get("timestamp_granularities", ())]
    found: list[str] = []
    for value in (part.strip() for raw in values for part in _listed(raw)):
        if value not in GRANULARITIES:
            raise invalid_request(
                "'timestamp_granularities' takes 'word' and 'segment'.",
                param="timestamp_granularities",
                value=value,
            )
        if value not in found:
            found.append(value)
    if found and response_format != "verbose_json":
        raise invalid_request(
            "'timestamp_granularities' needs response_format 'verbose_json'.",
            param="timestamp_granularities",
        )
    return tuple(found)


def _listed(raw: str) -> list[str]:
    """A form value's items: `word,segment`, or a JSON array as text (`["word"]`, what a
    client that JSON-encodes list fields sends)."""
    if raw.lstrip().startswith("["):
        try:
            items = orjson.loads(raw)
        except orjson.JSONDecodeError:
            items = None
        if isinstance(items, list):
            return [str(item) for item in items]
    return raw.split(",")


def _language(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _LANGUAGE.match(value):
        raise invalid_request(
            "'language' must be an ISO-639-1 code such as 'en'.", param="language", value=value
        )
    return value


def _context_bias(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(word.strip() for word in value.split(",") if word.strip())


def _check_word_count(count: int) -> None:
    """`context_bias` and `keywords` reach one vendor field: at most 100 words together."""
    if count > MAX_CONTEXT_BIAS_WORDS:
        raise invalid_request(
            f"'context_bias' and 'keywords' hold {count} words; the maximum is "
            f"{MAX_CONTEXT_BIAS_WORDS}.",
            param="context_bias",
        )


def _form_service(form: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """`service` from one JSON field or from bracketed form names; None when absent."""
    if "service" in form:
        raw = form["service"][-1]
        try:
            value = orjson.loads(raw)
        except ValueError:
            raise invalid_request(
                "'service' must be a JSON object.", param="service", value=raw
            ) from None
        return cast(dict[str, Any], body_object(value))
    service: dict[str, Any] = {}
    for name, values in form.items():
        if not name.startswith("service["):
            continue
        path = [part.rstrip("]") for part in name[len("service[") :].split("[")]
        _place(service, [p for p in path if p], values, is_list=name.endswith("[]"))
    return service or None


def _place(
    target: dict[str, Any], path: list[str], values: Sequence[str], *, is_list: bool
) -> None:
    for key in path[:-1]:
        nested = target.setdefault(key, {})
        if not isinstance(nested, dict):
            raise invalid_request("'service' fields conflict.", param="service")
        target = nested
    target[path[-1]] = list(values) if is_list else _scalar(values[-1])


def _scalar(text: str) -> Any:
    """Form values are text; numbers and booleans inside `service` are read as JSON."""
    try:
        return orjson.loads(text)
    except ValueError:
        return text


# -- shared field readers ------------------------------------------------------------------


def _choice(data: Mapping[str, Any], name: str, allowed: Sequence[str], default: str) -> str:
    value = data.get(name)
    if value is None or value == "":
        return default
    if value not in allowed:
        raise invalid_request(
            f"'{name}' must be one of {', '.join(allowed)}.", param=name, value=value
        )
    return str(value)


def _flag(value: Any, name: str) -> bool:
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise invalid_request(f"'{name}' must be a boolean.", param=name, value=value)


def _float_text(fields: Mapping[str, str], name: str) -> float | None:
    text = fields.get(name)
    if text is None or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise invalid_request(f"'{name}' must be a number.", param=name, value=text) from None


def _number(value: Any, name: str, low: float, high: float, *, default: float) -> float:
    found = _optional_number(value, name, low, high)
    return default if found is None else found


def _optional_number(value: Any, name: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise invalid_request(f"'{name}' must be a number.", param=name, value=value)
    if not low <= value <= high:
        raise invalid_request(
            f"'{name}' must be between {low:g} and {high:g}.", param=name, value=value
        )
    return float(value)
