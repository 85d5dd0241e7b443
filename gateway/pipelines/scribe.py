"""The ambient scribe: a structured clinical note under a JSON schema, PII/PHI findings in
the transcript, and the truth about compliance.

The language model is asked for the note with a `json_schema` response format; what it
answers is parsed and checked here field by field (a model's word is not trusted: an
answer that is not the schema's shape is a 502 `invalid_model_output`). PII/PHI is found
with the file family's detector (`gateway.kernels.pii.detector`) and reported masked, with its
confidence. `compliance.audit_logged` is true once the audit event is stored;
`compliance.hipaa` is true only when no stage sent the audio or the transcript outside
the gateway's machine or to a provider the workspace marked as covered by a business
associate agreement (provider setting `hipaa_baa: true`): with a vendor that is not, the
flag is false, whatever else was done.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from gateway.kernels.pii.detector import mask, scan_text
from gateway.platform.errors import ApiError

NOTE_FIELDS = (
    "chief_complaint",
    "duration",
    "symptoms",
    "medications_mentioned",
    "allergies_mentioned",
    "vital_signs",
)
_TEXT_OR_NULL = {"type": ["string", "null"]}
_LIST = {"type": "array", "items": {"type": "string"}}
NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": list(NOTE_FIELDS),
    "properties": {
        "chief_complaint": _TEXT_OR_NULL,
        "duration": _TEXT_OR_NULL,
        "symptoms": _LIST,
        "medications_mentioned": _LIST,
        "allergies_mentioned": _LIST,
        "vital_signs": {
            "anyOf": [
                {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
                {"type": "null"},
            ]
        },
    },
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "clinical_note", "strict": True, "schema": NOTE_SCHEMA},
}
LOCAL_PROVIDER = "local"


def structured_note(text: str) -> dict[str, Any]:
    """The note the model wrote, checked against `NOTE_SCHEMA` (502 when it is not)."""
    try:
        data = json.loads(_unfenced(text))
    except ValueError:
        raise _invalid("the answer is not JSON") from None
    if not isinstance(data, dict):
        raise _invalid("the answer is not a JSON object")
    missing = [f for f in NOTE_FIELDS if f not in data]
    if missing:
        raise _invalid(f"'{missing[0]}' is missing")
    note = {
        "chief_complaint": _text_or_null(data["chief_complaint"], "chief_complaint"),
        "duration": _text_or_null(data["duration"], "duration"),
        "symptoms": _strings(data["symptoms"], "symptoms"),
        "medications_mentioned": _strings(data["medications_mentioned"], "medications_mentioned"),
        "allergies_mentioned": _strings(data["allergies_mentioned"], "allergies_mentioned"),
        "vital_signs": _vitals(data["vital_signs"]),
    }
    return note


def _unfenced(text: str) -> str:
    """The JSON inside a ```json fence, as some models wrap it."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[-1].rsplit("```", 1)[0]
    return stripped


def _invalid(reason: str) -> ApiError:
    return ApiError(
        502,
        "invalid_model_output",
        f"The language model's clinical note does not match its schema: {reason}.",
    )


def _text_or_null(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _invalid(f"'{field}' is not a string or null")


def _strings(value: Any, field: str) -> list[str]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise _invalid(f"'{field}' is not an array of strings")


def _vitals(value: Any) -> dict[str, str | float] | None:
    if value is None:
        return None
    valid = isinstance(value, dict) and all(
        isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool))
        for v in value.values()
    )
    if not valid:
        raise _invalid("'vital_signs' is not an object of measurements or null")
    return dict(value)


def pii_findings(transcript: str) -> list[dict[str, Any]]:
    """PII/PHI in the transcript: type, masked value, confidence (blocking: run in a
    worker process, `gateway.kernels.pii.worker`)."""
    return [
        {"type": kind, "value": mask(transcript[start:end]), "confidence": round(score, 2)}
        for kind, start, end, score in scan_text(transcript)
    ]


def hipaa_covered(providers: Mapping[str, str | None], covered: Callable[[str], bool]) -> bool:
    """Whether every stage that ran stayed on this machine or on a covered provider."""
    used = [p for p in providers.values() if p is not None]
    return bool(used) and all(p == LOCAL_PROVIDER or covered(p) for p in used)
