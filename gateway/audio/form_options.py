"""The fields a transcription form may hold, and OpenAI's newer transcription options read
from it: `include[]`, `chunking_strategy`, `keywords[]`, `languages[]`,
`known_speaker_names[]` with `known_speaker_references[]`. Pure.

Every field is either honoured or refused (issue 36): a name this gateway does not know
is a 400 naming it, as chat's "Unrecognized request argument supplied", never dropped.
The official client writes lists as repeated `name[]` parts and objects as `name[key]`
parts (`chunking_strategy[type]=server_vad`); a client writing a list or an object as
JSON text in one part is read too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from gateway.platform.errors import ApiError, invalid_request
from providers.audio_types import Chunking, KnownSpeaker

# The form's own fields (lists without their `[]`), besides `file` and `service[...]`.
TRANSCRIPTION_FIELDS = frozenset(
    {
        "model",
        "response_format",
        "language",
        "prompt",
        "temperature",
        "timestamp_granularities",
        "stream",
        "diarize",
        "context_bias",
        "include",
        "chunking_strategy",
        "keywords",
        "languages",
        "known_speaker_names",
        "known_speaker_references",
    }
)
INCLUDES = ("logprobs",)
MAX_KNOWN_SPEAKERS = 4
_VAD_KEYS = frozenset({"type", "prefix_padding_ms", "silence_duration_ms", "threshold"})
_LANGUAGE = re.compile(r"^[a-z]{2}$")
# A data URL of audio in base64 (padded, at least one group): what OpenAI takes as a
# known speaker's reference clip; the declared form holds the same pattern.
_B64 = "[A-Za-z0-9+/]"
DATA_URL_PATTERN = (
    f"^data:audio/[A-Za-z0-9.+-]+;base64,(?:{_B64}{{4}})*"
    f"(?:{_B64}{{4}}|{_B64}{{3}}=|{_B64}{{2}}==)$"
)
_DATA_URL = re.compile(DATA_URL_PATTERN)


def field_name(part: str) -> str:
    """A form part's field: `include[]` and `chunking_strategy[type]` belong to `include`
    and `chunking_strategy`."""
    return part.split("[", 1)[0]


def refuse_unknown(form: Mapping[str, Sequence[str]]) -> None:
    """A 400 naming the first part that is no field of a transcription."""
    for part in form:
        name = field_name(part)
        if name not in TRANSCRIPTION_FIELDS and name not in ("file", "service"):
            raise invalid_request(f"Unrecognized request argument supplied: '{name}'.", param=name)


def listed(form: Mapping[str, Sequence[str]], name: str) -> tuple[str, ...]:
    """The items of list field `name`: repeated `name[]` (or `name`) parts, each a plain
    item or a JSON array as text; empty items left out."""
    items: list[str] = []
    for raw in [*form.get(f"{name}[]", ()), *form.get(name, ())]:
        items.extend(_items(raw))
    return tuple(item for item in (i.strip() for i in items) if item)


def _items(raw: str) -> list[str]:
    """A part's items: a JSON array of strings as text, else the text itself (a keyword
    may well begin with `[`)."""
    if raw.lstrip().startswith("["):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return [raw]
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
    return [raw]


def includes_logprobs(form: Mapping[str, Sequence[str]], response_format: str) -> bool:
    """Whether `include[]=logprobs` was asked; OpenAI gives them with `json` only."""
    found = listed(form, "include")
    for item in found:
        if item not in INCLUDES:
            raise invalid_request(
                f"'include' takes {', '.join(INCLUDES)}.", param="include", value=item
            )
    if found and response_format != "json":
        raise invalid_request("'include' logprobs needs response_format 'json'.", param="include")
    return bool(found)


def languages(form: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    found = listed(form, "languages")
    for code in found:
        if not _LANGUAGE.match(code):
            raise invalid_request(
                "'languages' holds ISO-639-1 codes such as 'en'.", param="languages", value=code
            )
    return found


def chunking(form: Mapping[str, Sequence[str]]) -> Chunking | None:
    """`chunking_strategy`: `auto`, a `server_vad` object as `chunking_strategy[key]`
    parts, or the object as JSON text; None when absent."""
    nested = {
        part[len("chunking_strategy[") :].rstrip("]"): values[-1]
        for part, values in form.items()
        if part.startswith("chunking_strategy[") and values
    }
    raw = (form.get("chunking_strategy") or [""])[-1].strip()
    if nested:
        return _vad({key: _scalar(text) for key, text in nested.items()})
    if not raw:
        return None
    if raw == "auto":
        return Chunking("auto")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = raw
    if value == "auto":
        return Chunking("auto")
    if not isinstance(value, dict):
        raise _bad_chunking(value)
    return _vad(value)


def _vad(config: Mapping[str, Any]) -> Chunking:
    unknown = set(config) - _VAD_KEYS
    if config.get("type") != "server_vad" or unknown:
        raise _bad_chunking(dict(config))
    return Chunking(
        "server_vad",
        prefix_padding_ms=_count(config, "prefix_padding_ms"),
        silence_duration_ms=_count(config, "silence_duration_ms"),
        threshold=_threshold(config),
    )


def _bad_chunking(value: Any) -> Exception:
    return invalid_request(
        "'chunking_strategy' is 'auto' or an object {type: 'server_vad', prefix_padding_ms, "
        "silence_duration_ms, threshold}.",
        param="chunking_strategy",
        value=value,
    )


def _count(config: Mapping[str, Any], key: str) -> int | None:
    """A tuning in milliseconds; absent is None, an explicit null is refused."""
    if key not in config:
        return None
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        where = f"chunking_strategy.{key}"
        raise invalid_request(f"'{where}' must be a whole number of milliseconds.", param=where)
    return value


def _threshold(config: Mapping[str, Any]) -> float | None:
    if "threshold" not in config:
        return None
    value = config["threshold"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        where = "chunking_strategy.threshold"
        raise invalid_request(f"'{where}' must be between 0 and 1.", param=where, value=value)
    return float(value)


def _scalar(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def known_speakers(form: Mapping[str, Sequence[str]]) -> tuple[KnownSpeaker, ...]:
    """`known_speaker_names[]` paired in order with `known_speaker_references[]` (data
    URLs of audio), at most four."""
    names = listed(form, "known_speaker_names")
    references = listed(form, "known_speaker_references")
    if len(names) != len(references):
        raise ApiError(
            400,
            "invalid_known_speakers",
            f"'known_speaker_names' has {len(names)} entries and 'known_speaker_references' "
            f"{len(references)}: each name needs one reference clip.",
            param="known_speaker_references" if names else "known_speaker_names",
        )
    if len(names) > MAX_KNOWN_SPEAKERS:
        raise invalid_request(
            f"At most {MAX_KNOWN_SPEAKERS} known speakers are supported.",
            param="known_speaker_names",
        )
    for reference in references:
        _check_data_url(reference)
    return tuple(KnownSpeaker(n, r) for n, r in zip(names, references, strict=True))


def _check_data_url(reference: str) -> None:
    if not _DATA_URL.match(reference):
        raise invalid_request(
            "'known_speaker_references' holds audio as base64 data URLs "
            "('data:audio/wav;base64,...').",
            param="known_speaker_references",
        )
