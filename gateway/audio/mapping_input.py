"""A voice mapping's request bodies, declared: the OpenAPI document's schemas and the
server's checks both come from these (`gateway.platform.shapes`).

`mappings` names a voice per speech provider of the catalog: its fields are the catalog's
speech providers, so a provider that cannot speak is refused by the declaration. A mapping
read and sent back is accepted: its read-only fields are ignored.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import attrs

from gateway.platform.shapes import NON_BLANK, NOT_NULL, Doc, Length, Pattern, Range, needs_fields
from providers.catalog import load_catalog

MAX_NAME = 64
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")
SPEECH_PROVIDERS = tuple(
    sorted(p.id for p in load_catalog().providers() if "speech" in p.capabilities)
)
VoiceId = Annotated[str | None, NON_BLANK, NOT_NULL, Doc("That provider's voice id")]
# One optional field per speech provider, at least one of them given.
ProviderVoices: type = needs_fields(1)(
    attrs.make_class(
        "ProviderVoices",
        {provider: attrs.field(default=None) for provider in SPEECH_PROVIDERS},
        kw_only=True,
        frozen=True,
    )
)
ProviderVoices.__annotations__ = dict.fromkeys(SPEECH_PROVIDERS, VoiceId)
ProviderVoices.__doc__ = "A speech provider's id to that provider's voice id."

Name = Annotated[
    str,
    Length(least=1, most=MAX_NAME),
    Pattern(NAME.pattern, "letters, digits, spaces, '.', '_' or '-'"),
]
ReadOnly = Annotated[Any, Doc("Read-only: ignored")]


@attrs.frozen(kw_only=True)
class DefaultSettings:
    """What speech with this mapping uses unless the request says otherwise."""

    stability: Annotated[float | None, Range(least=0, most=1), NOT_NULL] = None
    speed: Annotated[float | None, Range(least=0.25, most=4.0), NOT_NULL] = None


@attrs.frozen(kw_only=True)
class MappingSpec:
    """A voice mapping, whole (create, replace): one name for a voice per provider."""

    name: Name
    description: str | None = None
    mappings: ProviderVoices  # type: ignore[valid-type]  # made from the catalog
    default_settings: DefaultSettings | None = None
    id: ReadOnly = None
    object: ReadOnly = None
    created_at: ReadOnly = None
    updated_at: ReadOnly = None


@attrs.frozen(kw_only=True)
class MappingChange:
    """A change of a voice mapping: the fields given."""

    name: Annotated[Name | None, NOT_NULL] = None
    description: str | None = None
    mappings: Annotated[ProviderVoices | None, NOT_NULL] = None  # type: ignore[valid-type]
    default_settings: DefaultSettings | None = None
    id: ReadOnly = None
    object: ReadOnly = None
    created_at: ReadOnly = None
    updated_at: ReadOnly = None


def provider_voices(given: Any) -> dict[str, str]:
    """The providers a `ProviderVoices` names, with their voices."""
    return {name: voice for name, voice in attrs.asdict(given).items() if voice is not None}


def settings(given: DefaultSettings | None) -> dict[str, float]:
    if given is None:
        return {}
    return {name: value for name, value in attrs.asdict(given).items() if value is not None}
