"""The voice catalog and workspace voice mappings as the API shows them.

Mapping names share the `voice` namespace with standard and provider voice ids, so a name
that is one of those is refused (it could never be reached). A foreign workspace's mapping
answers exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired, TypedDict, cast

import attrs

from gateway.audio.mapping_input import (
    MappingChange,
    MappingSpec,
    provider_voices,
    settings,
)
from gateway.audio.services import AudioServices
from gateway.platform.answers import Time
from gateway.platform.errors import ApiError, not_found
from gateway.platform.shapes import Doc, Pattern, parse, parse_query
from gateway.platform.web import iso
from providers.catalog import Catalog
from providers.voices import StandardVoice, VoiceCatalog, VoiceInfo
from store.voice_mappings import VoiceMappingRecord

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


def parse_mapping(
    body: Any, voices: VoiceCatalog, catalog: Catalog, *, partial: bool = False
) -> dict[str, Any]:
    """The fields of a create or a replace (`MappingSpec`) or of a change (`partial`: a
    `MappingChange`, the fields present); a name that is already a voice id is refused
    (it could never be reached)."""
    spec: MappingSpec | MappingChange
    spec = parse(MappingChange, body) if partial else parse(MappingSpec, body)
    found: dict[str, Any] = {}
    if spec.name is not None:
        found["name"] = _name(spec.name, voices)
    if "description" in body or not partial:
        found["description"] = spec.description or ""
    if spec.mappings is not None:
        found["mappings"] = provider_voices(spec.mappings)
    if "default_settings" in body or not partial:
        found["default_settings"] = settings(spec.default_settings)
    return found


def _name(name: str, voices: VoiceCatalog) -> str:
    if voices.voice(name) is not None or voices.standard_voice(name) is not None:
        raise ApiError(
            409,
            "voice_mapping_exists",
            f"'{name}' is already a voice id; a mapping needs a name of its own.",
            param="name",
            name=name,
        )
    return name


def new_record(workspace_id: str, fields: Mapping[str, Any]) -> VoiceMappingRecord:
    now = datetime.now(UTC)
    return VoiceMappingRecord(workspace_id=workspace_id, created_at=now, updated_at=now, **fields)


class MappingSettings(TypedDict, total=False):
    stability: float
    speed: float


class VoiceMapping(TypedDict):
    """A workspace's name for a voice per provider."""

    id: str
    object: Literal["voice_mapping"]
    name: str
    description: str
    mappings: dict[str, str]
    default_settings: MappingSettings
    created_at: Time
    updated_at: Time


class MappingList(TypedDict):
    """The workspace's voice mappings (`voice_mappings`: the same list)."""

    object: Literal["list"]
    data: list[VoiceMapping]
    voice_mappings: list[VoiceMapping]


def mapping_body(record: VoiceMappingRecord) -> VoiceMapping:
    return {
        "id": record.id,
        "object": "voice_mapping",
        "name": record.name,
        "description": record.description,
        "mappings": dict(record.mappings),
        "default_settings": cast(MappingSettings, dict(record.default_settings)),
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
