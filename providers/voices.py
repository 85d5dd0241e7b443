"""The voice catalog: every speech provider's voices and the six standard voices.

Data (`providers/data/voices.json`, sources in `SOURCES.md`), read once and checked on load:
voice ids are unique across providers (so `/v1/audio/voices/{id}` needs no provider), every
standard voice maps to one voice of each provider, and each mapped voice exists. Pure.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

import attrs

STANDARD_IDS = ("professional", "friendly", "calm", "energetic", "serious", "casual")


@attrs.frozen
class VoiceInfo:
    id: str
    name: str
    provider: str
    gender: str
    languages: tuple[str, ...]
    service_standard: str | None
    description: str
    age: str
    accent: str
    use_cases: tuple[str, ...]
    settings: Mapping[str, Any] | None


@attrs.frozen
class StandardVoice:
    id: str
    description: str
    mappings: Mapping[str, str]  # provider id -> that provider's voice id


@attrs.frozen
class VoiceCatalog:
    voices: tuple[VoiceInfo, ...]
    standard: tuple[StandardVoice, ...]
    _by_id: Mapping[str, VoiceInfo] = attrs.field(init=False)
    _standard_by_id: Mapping[str, StandardVoice] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_by_id", MappingProxyType({v.id: v for v in self.voices}))
        standard = MappingProxyType({s.id: s for s in self.standard})
        object.__setattr__(self, "_standard_by_id", standard)

    def voice(self, voice_id: str) -> VoiceInfo | None:
        return self._by_id.get(voice_id)

    def standard_voice(self, standard_id: str) -> StandardVoice | None:
        return self._standard_by_id.get(standard_id)

    def filtered(self, *, provider: str | None, language: str | None) -> list[VoiceInfo]:
        return [
            v
            for v in self.voices
            if (provider is None or v.provider == provider)
            and (language is None or language in v.languages)
        ]


class VoiceCatalogError(ValueError):
    """The voice data is inconsistent; the message names the first offending entry."""


def parse_voices(data: Mapping[str, Any]) -> VoiceCatalog:
    voices = tuple(_voice(raw) for raw in data["voices"])
    standard = tuple(
        StandardVoice(str(s["id"]), str(s["description"]), MappingProxyType(dict(s["mappings"])))
        for s in data["standard_voices"]
    )
    catalog = VoiceCatalog(voices, standard)
    _check(catalog)
    return catalog


def _voice(raw: Mapping[str, Any]) -> VoiceInfo:
    settings = raw.get("settings")
    return VoiceInfo(
        id=str(raw["id"]),
        name=str(raw["name"]),
        provider=str(raw["provider"]),
        gender=str(raw["gender"]),
        languages=tuple(raw["languages"]),
        service_standard=raw.get("service_standard"),
        description=str(raw["description"]),
        age=str(raw["age"]),
        accent=str(raw["accent"]),
        use_cases=tuple(raw["use_cases"]),
        settings=MappingProxyType(dict(settings)) if settings else None,
    )


def _check(catalog: VoiceCatalog) -> None:
    if len({v.id for v in catalog.voices}) != len(catalog.voices):
        raise VoiceCatalogError("voice ids must be unique across providers")
    providers = {v.provider for v in catalog.voices}
    if tuple(s.id for s in catalog.standard) != STANDARD_IDS:
        raise VoiceCatalogError(f"the standard voices must be {', '.join(STANDARD_IDS)}")
    for standard in catalog.standard:
        if set(standard.mappings) != providers:
            raise VoiceCatalogError(f"standard voice {standard.id!r} must map every provider")
        for provider, voice_id in standard.mappings.items():
            voice = catalog.voice(voice_id)
            if voice is None or voice.provider != provider:
                raise VoiceCatalogError(f"standard voice {standard.id!r}: unknown {voice_id!r}")


@functools.cache
def load_voices() -> VoiceCatalog:
    text = resources.files("providers").joinpath("data", "voices.json").read_text("utf-8")
    return parse_voices(json.loads(text))
