"""Provider configuration bodies, declared (`ProviderConfiguration`, `ProviderChange`,
`CredentialsUpdate`: the OpenAPI document's schemas and the server's checks come from
them), what they mean checked after, and the provider state table (pure).

Unusable credentials are the spec's 422 `invalid_credentials`, checked before the shape
(so a blank `api_key` is that, not a shape refusal). A setting that is well formed but
does not fit the provider (a `default_model` of another vendor, a `base_url` the HTTP
client cannot use) is 400 `invalid_configuration`.

The state table follows the spec: configure makes any provider active; credentials can
be updated while active (or disabled, keeping it disabled); disable works from active;
enable brings a disabled provider back to active; delete removes the configuration
(the provider is then `inactive`, i.e. not configured).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Annotated, Any

import attrs
import httpx

from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import NON_BLANK, Choices, Doc, Length, Pattern, accepts_more, parse
from providers.elevenlabs_ws import TRANSPORT_SETTING, TRANSPORTS
from providers.openai_realtime import TRANSPORT_SETTING as REALTIME_SETTING
from providers.openai_realtime import TRANSPORTS as REALTIME_TRANSPORTS

MAX_SETTING = 200  # characters of a named setting (an id or a name, never a document)
MAX_SECRET = 4096

NamedSetting = Annotated[str, NON_BLANK, Length(most=MAX_SETTING)]


@accepts_more
@attrs.frozen
class Credentials:
    """The vendor's credentials: `api_key`, and the vendor's own fields (strings, numbers,
    booleans). Stored encrypted, never shown."""

    api_key: Annotated[str, NON_BLANK, Length(most=MAX_SECRET)]


@accepts_more
@attrs.frozen
class ProviderSettings:
    """Settings merged over the stored ones (null removes one). The provider's own fields
    (`region`) are kept as given."""

    organization_id: NamedSetting | None = None
    default_voice: NamedSetting | None = None
    default_model: Annotated[NamedSetting, Doc("One of the provider's models")] | None = None
    base_url: (
        Annotated[
            str,
            Pattern("^[Hh][Tt][Tt][Pp][Ss]?://", "an http or https URL"),
            Doc("Where the operator's address policy lets providers go"),
        ]
        | None
    ) = None
    speech_transport: Annotated[str, Choices(TRANSPORTS)] | None = None
    realtime_transport: Annotated[str, Choices(REALTIME_TRANSPORTS)] | None = None


@attrs.frozen
class ProviderConfiguration:
    """A provider of the catalog configured (or configured again) with its credentials."""

    provider: Annotated[str, Length(least=1), Doc("A provider id of the catalog")]
    credentials: Credentials
    settings: ProviderSettings | None = None


@attrs.frozen
class ProviderChange:
    """New settings for a configured provider."""

    settings: ProviderSettings | None = None


@attrs.frozen
class NestedCredentials:
    """The credentials as `configure` takes them (`{"credentials": {...}}`)."""

    credentials: Credentials


CredentialsUpdate = Credentials | NestedCredentials

# (current status, trigger) -> next status
TRANSITIONS: Mapping[tuple[str, str], str] = {
    ("inactive", "configure"): "active",
    ("active", "configure"): "active",
    ("disabled", "configure"): "active",
    ("active", "update_credentials"): "active",
    ("disabled", "update_credentials"): "disabled",
    ("active", "disable"): "disabled",
    ("disabled", "disable"): "disabled",
    ("disabled", "enable"): "active",
    ("active", "enable"): "active",
}


def next_status(current: str, trigger: str) -> str:
    """The status after `trigger`, or a 409 naming the state that forbids it."""
    try:
        return TRANSITIONS[(current, trigger)]
    except KeyError:
        raise ApiError(
            409,
            "invalid_state",
            f"Cannot {trigger.replace('_', ' ')} a provider that is {current}.",
            type="invalid_request_error",
        ) from None


def parse_configuration(body: Mapping[str, Any]) -> ProviderConfiguration:
    """The configure body: its credentials' meaning first (422), then its shape."""
    if isinstance(body.get("credentials"), dict):
        parse_credentials(body["credentials"])
    return parse(ProviderConfiguration, body)


def parse_credentials_update(body: Mapping[str, Any]) -> dict[str, Any]:
    """The credentials of `POST .../credentials`: at the top, as the spec sends them, or
    nested as `configure` takes them."""
    nested = set(body) == {"credentials"} and isinstance(body["credentials"], dict)
    credentials = parse_credentials(body["credentials"] if nested else body)
    parse(CredentialsUpdate, body)
    return credentials


def parse_credentials(value: Any) -> dict[str, Any]:
    """Credentials must be an object with a non-empty string `api_key` (422 otherwise)."""
    if not isinstance(value, dict):
        raise invalid_request(
            '\'credentials\' must be an object, e.g. {"api_key": "..."}.', param="credentials"
        )
    api_key = value.get("api_key")
    if not isinstance(api_key, str) or not api_key.strip() or len(api_key) > 4096:
        raise ApiError(
            422,
            "invalid_credentials",
            "'credentials.api_key' must be a non-empty string.",
            param="credentials.api_key",
        )
    extra = {k: v for k, v in value.items() if k != "api_key"}
    if not all(isinstance(v, str | int | float | bool | type(None)) for v in extra.values()):
        raise ApiError(
            422,
            "invalid_credentials",
            "Credential fields must be strings, numbers or booleans.",
            param="credentials",
        )
    return {"api_key": api_key.strip(), **extra}


def parse_settings(
    value: Any, current: Mapping[str, Any] | None = None, *, models: Collection[str] = ()
) -> dict[str, Any]:
    """Merge a `settings` object over `current` (null removes a field); check the spec's
    fields (`default_model` one of `models`, the provider's own; `organization_id` and
    `default_voice` strings) and `base_url`. Other fields are kept as given (families read
    their own, e.g. `region`)."""
    if value is None:
        return dict(current or {})
    parse(ProviderSettings, value, at="settings")
    _check_default_model(value.get("default_model"), models)
    merged = dict(current or {})
    for name, item in value.items():
        if item is None:
            merged.pop(name, None)
        else:
            merged[name] = item
    base_url = merged.get("base_url")
    if base_url is not None:
        _check_base_url(base_url)
    _check_choice(TRANSPORT_SETTING, TRANSPORTS, merged.get(TRANSPORT_SETTING))
    _check_choice(REALTIME_SETTING, REALTIME_TRANSPORTS, merged.get(REALTIME_SETTING))
    return merged


def _check_default_model(model: Any, models: Collection[str]) -> None:
    if model is not None and models and model not in models:
        raise invalid_configuration(
            f"'settings.default_model' must be one of this provider's models: "
            f"{', '.join(sorted(models))}.",
            param="settings.default_model",
            value=model,
        )


def invalid_configuration(message: str, *, param: str, value: Any) -> ApiError:
    """A setting of the right shape that does not fit the provider."""
    return ApiError(400, "invalid_configuration", message, param=param, value=value)


def _check_choice(name: str, choices: tuple[str, ...], value: Any) -> None:
    """A setting that is one of `choices`: ElevenLabs' speech transport
    (`providers.elevenlabs_ws`), OpenAI's realtime transport (`providers.openai_realtime`)."""
    if value is not None and value not in choices:
        raise invalid_request(
            f"'settings.{name}' must be one of {', '.join(choices)}.",
            param=f"settings.{name}",
            value=value,
        )


def _check_base_url(value: Any) -> None:
    """Parsed as the adapters' HTTP client will parse it, so a URL accepted here cannot
    fail later in every request (e.g. a non-numeric port)."""
    try:
        url = httpx.URL(value) if isinstance(value, str) else None
        host = url.host if url is not None else ""
    except (httpx.InvalidURL, UnicodeError):  # UnicodeError: a host that is not valid IDNA
        url, host = None, ""
    if (
        url is None
        or url.scheme not in ("http", "https")
        or not host
        or (url.port is not None and not 0 < url.port < 65536)
    ):
        raise invalid_configuration(
            "'settings.base_url' must be an http(s) URL with a host (and a port from 1 to 65535).",
            param="settings.base_url",
            value=value,
        )
