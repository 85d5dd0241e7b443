"""Validating provider configuration bodies, and the provider state table (pure).

The state table follows the spec: configure makes any provider active; credentials can
be updated while active (or disabled, keeping it disabled); disable works from active;
enable brings a disabled provider back to active; delete removes the configuration
(the provider is then `inactive`, i.e. not configured).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import httpx

from gateway.platform.errors import ApiError, invalid_request
from providers.elevenlabs_ws import TRANSPORT_SETTING, TRANSPORTS
from providers.openai_realtime import TRANSPORT_SETTING as REALTIME_SETTING
from providers.openai_realtime import TRANSPORTS as REALTIME_TRANSPORTS

MAX_SETTING = 200  # characters of a named setting (an id or a name, never a document)

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
    if not isinstance(value, dict):
        raise invalid_request("'settings' must be an object.", param="settings", value=value)
    _check_named_settings(value, models)
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


def _check_named_settings(value: Mapping[str, Any], models: Collection[str]) -> None:
    for name in ("organization_id", "default_voice", "default_model"):
        item = value.get(name)
        if item is None:
            continue
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_SETTING:
            raise invalid_request(
                f"'settings.{name}' must be a non-empty string of at most {MAX_SETTING} "
                "characters.",
                param=f"settings.{name}",
                value=item,
            )
    model = value.get("default_model")
    if model is not None and models and model not in models:
        raise invalid_request(
            f"'settings.default_model' must be one of this provider's models: "
            f"{', '.join(sorted(models))}.",
            param="settings.default_model",
            value=model,
        )


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
        raise invalid_request(
            "'settings.base_url' must be an http(s) URL.", param="settings.base_url", value=value
        )
