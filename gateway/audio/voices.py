"""The voice catalog and workspace voice mappings as the API shows them.

Mapping names share the `voice` namespace with standard and provider voice ids, so a name
that is one of those is refused (it could never be reached). A foreign workspace's mapping
answers exactly like an unknown one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, NotRequired, TypedDict, cast

import attrs

from gateway.audio.services import AudioServices
from gateway.platform.errors import ApiError, invalid_request, not_found
from gateway.platform.params import body_object, optional_string, required_string
from gateway.platform.shapes import Doc, Pattern, parse_query
from gateway.platform.web import iso
from providers.catalog import Catalog
from providers.voices import StandardVoice, VoiceCatalog, VoiceInfo
from store.voice_mappings import VoiceMappingRecord

MAX_NAME = 64
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")
SETTINGS_BOUNDS = {"stability": (0.0, 1.0), "speed": (0.25, 4.0)}
# The detail's `settings` of a voice whose vendor publishes no defaults of its own: the
# spec gives every detail this object, and these are the values `service.voice_settings`
# starts from (ElevenLabs' documented defaults; other vendors ignore these controls).
DEFAULT_VOICE_SETTINGS: Mapping[str, float | bool] = {
    "stability": 0.5,
    "similarity_boost": 0.75,
    "style": 0.0,
    "use_speaker_boost": True,
}


async def mapping_named(
    services: AudioServices, workspace_id: str, name: str
) -> Mapping[str, str] | None:
    """The provider voices of the workspace's mapping called `name`, if there is one
    (from memory: `gateway.audio.mapping_book`)."""
    return await services.voice_mappings.named(services.db, workspace_id, name)


async def mapping_record_named(
    services: AudioServices, workspace_id: str, name: str
) -> VoiceMappingRecord | None:
    """The workspace's mapping called `name` with its `default_settings` (from memory)."""
    return await services.voice_mappings.record(services.db, workspace_id, name)


# -- catalog views -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class VoicesQuery:
    """The catalog's filters; each left out lists every voice."""

    provider: Annotated[str | None, Doc("Only this provider's voices")] = None
    language: (
        Annotated[
            str,
            Pattern("^[a-z]{2}$", "an ISO-639-1 code such as 'en'"),
            Doc("Only voices speaking this ISO-639-1 code"),
        ]
        | None
    ) = None


class VoiceSettings(TypedDict):
    stability: float
    similarity_boost: float
    style: float
    use_speaker_boost: bool


class Voice(TypedDict):
    """A voice of the catalog (`service_standard`: the standard voice it stands for)."""

    id: str
    name: str
    provider: str
    gender: str
    languages: list[str]
    preview_url: str
    service_standard: str | None
    description: NotRequired[str]
    age: NotRequired[str]
    accent: NotRequired[str]
    use_cases: NotRequired[list[str]]
    settings: NotRequired[VoiceSettings]


class StandardVoiceBody(TypedDict):
    """A standard voice, and the provider voice it is with each provider."""

    id: str
    description: str
    mappings: dict[str, str]


class VoiceCatalogBody(TypedDict):
    voices: list[Voice]
    standard_voices: list[StandardVoiceBody]


def voice_body(voice: VoiceInfo, *, detail: bool) -> Voice:
    body: Voice = {
        "id": voice.id,
        "name": voice.name,
        "provider": voice.provider,
        "gender": voice.gender,
        "languages": list(voice.languages),
        "preview_url": f"/v1/audio/voices/{voice.id}/preview",
        "service_standard": voice.service_standard,
    }
    if detail:
        body["description"] = voice.description
        body["age"] = voice.age
        body["accent"] = voice.accent
        body["use_cases"] = list(voice.use_cases)
        settings = dict(DEFAULT_VOICE_SETTINGS) | dict(voice.settings or {})
        body["settings"] = cast(VoiceSettings, settings)  # the catalog's, over the defaults
    return body


def standard_body(standard: StandardVoice) -> StandardVoiceBody:
    return {
        "id": standard.id,
        "description": standard.description,
        "mappings": dict(standard.mappings),
    }


def voices_listing(
    voices: VoiceCatalog, query: Mapping[str, str], catalog: Catalog
) -> VoiceCatalogBody:
    asked = parse_query(VoicesQuery, query)
    provider, language = asked.provider or None, asked.language
    if provider is not None and catalog.provider(provider) is None:
        raise ApiError(
            400,
            "unknown_provider",
            f"Unknown provider '{provider}'.",
            param="provider",
            value=provider,
        )
    return {
        "voices": [
            voice_body(v, detail=False)
            for v in voices.filtered(provider=provider, language=language)
        ],
        "standard_voices": [standard_body(s) for s in voices.standard],
    }


def voice_or_404(voices: VoiceCatalog, voice_id: str) -> VoiceInfo:
    voice = voices.voice(voice_id)
    if voice is None:
        raise not_found("voice_not_found", f"No voice '{voice_id}'.", voice_id=voice_id)
    return voice


# -- mappings ------------------------------------------------------------------------------


MAPPING_FIELDS = frozenset({"name", "description", "mappings", "default_settings"})
MAPPING_READ_ONLY = frozenset({"id", "object", "created_at", "updated_at"})


def parse_mapping(
    body: Any, voices: VoiceCatalog, catalog: Catalog, *, partial: bool = False
) -> dict[str, Any]:
    """The fields of a create (all that matter) or an update (`partial`: those present).
    A field the mapping does not have is a 400 (a misspelt `default_setting` was dropped
    silently); the read-only fields of its own answer are let through, so that a mapping
    read and sent back is accepted."""
    data = body_object(body)
    unknown = sorted(set(data) - MAPPING_FIELDS - MAPPING_READ_ONLY)
    if unknown:
        raise invalid_request(
            f"Unknown field '{unknown[0]}'; a voice mapping takes "
            f"{', '.join(sorted(MAPPING_FIELDS))}.",
            param=unknown[0],
        )
    found: dict[str, Any] = {}
    if not partial or "name" in data:
        found["name"] = _name(required_string(data, "name"), voices)
    if "description" in data or not partial:
        found["description"] = optional_string(data, "description") or ""
    if "mappings" in data or not partial:
        found["mappings"] = _mappings(data.get("mappings"), catalog)
    if "default_settings" in data or not partial:
        found["default_settings"] = _settings(data.get("default_settings"))
    return found


def _name(name: str, voices: VoiceCatalog) -> str:
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise invalid_request(
            f"'name' takes 1-{MAX_NAME} letters, digits, spaces, '.', '_' or '-'.",
            param="name",
            value=name,
        )
    if voices.voice(name) is not None or voices.standard_voice(name) is not None:
        raise invalid_request(
            f"'{name}' is already a voice id; a mapping needs a name of its own.",
            param="name",
            value=name,
        )
    return name


def _mappings(value: Any, catalog: Catalog) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise invalid_request(
            "'mappings' must be an object of provider id to voice id.", param="mappings"
        )
    for provider, voice in value.items():
        info = catalog.provider(provider)
        if info is None or "speech" not in info.capabilities:
            raise invalid_request(
                f"'{provider}' is not a speech provider.", param="mappings", value=provider
            )
        if not isinstance(voice, str) or not voice.strip():
            raise invalid_request(
                f"'mappings.{provider}' must be a voice id.", param="mappings", value=voice
            )
    return dict(value)


def _settings(value: Any) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_request("'default_settings' must be an object.", param="default_settings")
    settings: dict[str, float] = {}
    for name, raw in value.items():
        bounds = SETTINGS_BOUNDS.get(name)
        if bounds is None:
            raise invalid_request(
                f"'default_settings' takes {', '.join(SETTINGS_BOUNDS)}.",
                param="default_settings",
                value=name,
            )
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise invalid_request(f"'default_settings.{name}' must be a number.", param=name)
        if not bounds[0] <= raw <= bounds[1]:
            raise invalid_request(
                f"'default_settings.{name}' must be between {bounds[0]:g} and {bounds[1]:g}.",
                param=f"default_settings.{name}",
                value=raw,
            )
        settings[name] = float(raw)
    return settings


def new_record(workspace_id: str, fields: Mapping[str, Any]) -> VoiceMappingRecord:
    now = datetime.now(UTC)
    return VoiceMappingRecord(workspace_id=workspace_id, created_at=now, updated_at=now, **fields)


def mapping_body(record: VoiceMappingRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "voice_mapping",
        "name": record.name,
        "description": record.description,
        "mappings": dict(record.mappings),
        "default_settings": dict(record.default_settings),
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
    }


def mapping_not_found(mapping_id: str) -> ApiError:
    return not_found(
        "voice_mapping_not_found", f"No voice mapping '{mapping_id}'.", mapping_id=mapping_id
    )


def name_taken(name: str) -> ApiError:
    return ApiError(
        409, "voice_mapping_exists", f"A voice mapping named '{name}' already exists.", name=name
    )


def updated(record: VoiceMappingRecord, fields: Mapping[str, Any]) -> VoiceMappingRecord:
    return attrs.evolve(record, **fields, updated_at=datetime.now(UTC))
