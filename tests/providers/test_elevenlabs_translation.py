"""ElevenLabs' pure parsing and error mapping, table-driven: no I/O, no trio."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.base import ProviderEndpoint
from providers.elevenlabs import (
    ElevenLabsProvider,
    ErrorDetail,
    Voice,
    map_elevenlabs_error,
    parse_error,
    parse_model_ids,
    parse_voice,
    parse_voices,
)
from providers.errors import (
    AuthenticationFailed,
    InvalidUpstreamRequest,
    ModelOverloaded,
    ProviderError,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.upstream import LeanUpstream


def body(detail: Any) -> bytes:
    return json.dumps({"detail": detail}).encode()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            [{"model_id": "eleven_multilingual_v2", "name": "x"}, {"model_id": "eleven_v3"}],
            ["eleven_multilingual_v2", "eleven_v3"],
        ),
        ([], []),
        ([{"name": "no id"}, "junk", {"model_id": ""}, {"model_id": "a"}], ["a"]),
        ({"models": [{"model_id": "a"}]}, []),  # not ElevenLabs' shape: nothing listed
        (None, []),
    ],
)
def test_parse_model_ids(data: Any, expected: list[str]) -> None:
    assert parse_model_ids(data) == expected


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (
            {
                "voice_id": "21m00Tcm4TlvDq8ikWAM",
                "name": "Rachel",
                "category": "premade",
                "labels": {"accent": "american", "gender": "female"},
                "preview_url": "https://example/preview.mp3",
            },
            Voice("21m00Tcm4TlvDq8ikWAM", "Rachel", {"accent": "american", "gender": "female"}),
        ),
        ({"voice_id": "v1"}, Voice("v1", "v1", {})),
        ({"voice_id": "v1", "name": "N", "labels": None}, Voice("v1", "N", {})),
        (
            {"voice_id": "v1", "name": "N", "labels": {"a": 1, "b": None}},
            Voice("v1", "N", {"a": "1"}),
        ),
        ({"name": "no id"}, None),
        ({"voice_id": ""}, None),
    ],
)
def test_parse_voice(item: dict[str, Any], expected: Voice | None) -> None:
    assert parse_voice(item) == expected


@pytest.mark.parametrize(
    ("data", "expected_ids"),
    [
        ({"voices": [{"voice_id": "a"}, {"name": "skip"}, "junk", {"voice_id": "b"}]}, ["a", "b"]),
        ({"voices": []}, []),
        ({"voices": None}, []),
        ({}, []),
        ([], []),
    ],
)
def test_parse_voices(data: Any, expected_ids: list[str]) -> None:
    assert [voice.voice_id for voice in parse_voices(data)] == expected_ids


@pytest.mark.parametrize(
    ("status", "raw", "expected"),
    [
        (
            401,
            body({"status": "invalid_api_key", "message": "Invalid API key"}),
            ErrorDetail("Invalid API key", "invalid_api_key"),
        ),
        (429, body({"status": "system_busy"}), ErrorDetail("system_busy", "system_busy")),
        (
            422,
            body([{"loc": ["query", "page_size"], "msg": "too large", "type": "value_error"}]),
            ErrorDetail("too large", "value_error", "page_size"),
        ),
        (400, body("Bad voice"), ErrorDetail("Bad voice")),
        (500, b"<html>oops</html>", ErrorDetail("upstream answered HTTP 500")),
        (502, b"", ErrorDetail("upstream answered HTTP 502")),
        (404, b'{"detail": {}}', ErrorDetail("upstream answered HTTP 404")),
        (422, body([]), ErrorDetail("upstream answered HTTP 422")),
    ],
)
def test_parse_error(status: int, raw: bytes, expected: ErrorDetail) -> None:
    assert parse_error(status, raw) == expected


DETAIL = body({"status": "some_status", "message": "said the vendor"})


@pytest.mark.parametrize(
    ("status", "headers", "error_class", "fields"),
    [
        (401, {}, AuthenticationFailed, {}),
        (403, {}, AuthenticationFailed, {}),
        (429, {"retry-after": "7"}, ModelOverloaded, {"retry_after": 7, "model": ""}),
        (429, {}, ModelOverloaded, {"retry_after": None}),
        (503, {"retry-after": "3"}, UpstreamUnavailable, {"retry_after": 3}),
        (504, {}, UpstreamTimeout, {}),
        (500, {}, UpstreamHTTPError, {"status": 500, "vendor_code": "some_status"}),
        (502, {}, UpstreamHTTPError, {"status": 502}),
        (400, {}, InvalidUpstreamRequest, {"param": None}),
        (404, {}, InvalidUpstreamRequest, {}),
        (422, {}, InvalidUpstreamRequest, {}),
    ],
)
def test_map_error(
    status: int, headers: dict[str, str], error_class: type[ProviderError], fields: dict[str, Any]
) -> None:
    error = map_elevenlabs_error("elevenlabs", status, DETAIL, headers, "")
    assert type(error) is error_class
    assert (error.provider, error.message) == ("elevenlabs", "said the vendor")
    for name, value in fields.items():
        assert getattr(error, name) == value


def test_retryable_follows_the_status() -> None:
    def retryable(status: int) -> bool:
        return map_elevenlabs_error("elevenlabs", status, b"", {}, "").retryable

    assert [retryable(s) for s in (401, 422, 429, 500, 503, 504)] == [
        False,
        False,
        True,
        True,
        True,
        True,
    ]


def test_validation_error_names_the_param() -> None:
    raw = body([{"loc": ["body", "text"], "msg": "field required", "type": "missing"}])
    error = map_elevenlabs_error("elevenlabs", 422, raw, {}, "")
    assert isinstance(error, InvalidUpstreamRequest)
    assert (error.param, error.message) == ("text", "field required")


def test_authenticates_with_xi_api_key_only() -> None:
    endpoint = ProviderEndpoint("elevenlabs", "https://api.elevenlabs.io/", "xi-secret")
    adapter = ElevenLabsProvider(LeanUpstream(), endpoint)
    assert adapter.auth_headers() == {"xi-api-key": "xi-secret"}
    assert "authorization" not in adapter._headers
    assert adapter.url("/v1/models") == "https://api.elevenlabs.io/v1/models"
