"""The error envelope and the one exception type handlers raise to produce it.

Every error the gateway answers has the spec's shape `{"error": {message, type, code,
doc_url, ...}}`. Handlers raise `ApiError`; provider failures are translated by
`from_provider_error`, so a vendor's failure never reaches a client as a 200 or a bare 500.
`doc_url` is the code's entry on the gateway's own errors page (docs/errors.md, served at
`/docs/pages/errors`), under the base URL of the request being answered (`doc_base`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, NotRequired, TypedDict

import attrs

from providers import errors as upstream

ERRORS_PAGE = "/docs/pages/errors#"
# The gateway's base URL as the client of the request being answered reaches it (no trailing
# slash), set per request by `gateway.platform.doc_links.DocLinks`: a context variable, so an
# error raised anywhere under the request (a stream's last event too) links to the same
# gateway without every layer carrying the request. Outside a request: the path alone.
# A function in its place gives the base when asked: a request's own base is worked out
# from its headers only if one of its errors needs a link (most answers have none).
doc_base: ContextVar[str | Callable[[], str]] = ContextVar("gateway_doc_base", default="")


def doc_url(code: str) -> str:
    """Where the errors page explains `code`, on this gateway."""
    base = doc_base.get()
    return f"{base if isinstance(base, str) else base()}{ERRORS_PAGE}{code}"


class ErrorDetail(TypedDict):
    """What went wrong: `message` is for people and may change, `code` is stable. Besides
    these, a code may add fields of its own (`param` and
    `value` for what the request got wrong, `retry_after`, `provider`...): see each code
    on /docs/pages/errors."""

    message: str
    type: str
    code: str | None
    doc_url: NotRequired[str]
    param: NotRequired[str | None]


class Error(TypedDict):
    """The envelope of every error answer."""

    error: ErrorDetail


class ApiError(Exception):
    """An error answer: HTTP `status`, error `code` and `type`, and code-specific fields."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        type: str = "invalid_request_error",
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.type = type
        self.headers = dict(headers or {})
        self.extra = extra
        # Set once the refusal has a usage record (`gateway.upstream.usage.UsageLog.refusal`),
        # so a check further out does not record the same request twice.
        self.recorded = False

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {
            "message": self.message,
            "type": self.type,
            "code": self.code,
            "doc_url": doc_url(self.code),
        }
        error.update(self.extra)
        return {"error": error}


def invalid_request(message: str, *, param: str | None = None, value: Any = None) -> ApiError:
    """A 400 for a request the client got wrong, naming the parameter and the bad value."""
    return ApiError(400, "invalid_request", message, param=param, value=value)


def invalid_period(message: str, *, param: str, value: Any = None) -> ApiError:
    """A 400 for dates that are each well formed but do not make a period together (an
    end before the start, one without the other, too long a span): a refusal of what the
    parameters mean together, which a document's per-parameter schemas cannot state."""
    return ApiError(400, "invalid_period", message, param=param, value=value)


def invalid_tool_choice(message: str, *, param: str, value: Any = None) -> ApiError:
    """A 400 for a `tool_choice` that does not fit the tools offered (naming one not
    among them, or asking for one when none are offered)."""
    return ApiError(400, "invalid_tool_choice", message, param=param, value=value)


def not_found(code: str, message: str, **extra: Any) -> ApiError:
    return ApiError(404, code, message, type="not_found_error", **extra)


def permission_denied(message: str) -> ApiError:
    return ApiError(403, "insufficient_permissions", message, type="permission_error")


def invalid_api_key(message: str = "Invalid or missing API key.") -> ApiError:
    return ApiError(
        401,
        "invalid_api_key",
        message,
        type="authentication_error",
        headers={"www-authenticate": 'Bearer realm="gateway"'},
    )


@attrs.frozen
class _Shape:
    """How one adapter exception class is answered: status, code, type, extra fields."""

    status: int
    code: str
    type: str
    fields: Callable[[Any], dict[str, Any]]
    retry_header: bool = False


_SHAPES: tuple[tuple[type[upstream.ProviderError], _Shape], ...] = (
    (
        upstream.UpstreamTimeout,
        _Shape(504, "provider_timeout", "provider_error", lambda e: {"timeout_ms": e.timeout_ms}),
    ),
    (
        upstream.ModelOverloaded,
        _Shape(
            503,
            "model_overloaded",
            "provider_error",
            lambda e: {"model": e.model, "retry_after": e.retry_after or 1},
            retry_header=True,
        ),
    ),
    (
        upstream.ModelNotFound,
        # the type of the gateway's own model_not_found (`resolve.model_not_found`): one
        # code, one type, whoever found the model missing
        _Shape(404, "model_not_found", "not_found_error", lambda e: {"model": e.model}),
    ),
    (
        upstream.ContextLengthExceeded,
        _Shape(
            400,
            "context_length_exceeded",
            "invalid_request_error",
            lambda e: {
                "model": e.model,
                "max_tokens": e.max_tokens,
                "requested_tokens": e.requested_tokens,
            },
        ),
    ),
    (
        upstream.ContentFiltered,
        _Shape(
            400,
            "content_filter",
            "invalid_request_error",
            lambda e: {"filter_reason": e.filter_reason},
        ),
    ),
    (
        upstream.InvalidUpstreamRequest,
        _Shape(
            400,
            "invalid_request",
            "invalid_request_error",
            lambda e: {"param": e.param, "value": e.value},
        ),
    ),
    (
        upstream.Unsupported,
        _Shape(
            400,
            "invalid_request",
            "invalid_request_error",
            lambda e: {"param": "model", "value": None},
        ),
    ),
)


def from_provider_error(
    exc: upstream.ProviderError, *, available_models: list[str] | None = None
) -> ApiError:
    """The spec's provider-error answer for an adapter's exception."""
    if isinstance(exc, upstream.UpstreamUnavailable):
        return provider_unavailable(exc.provider, exc.message, exc.retry_after)
    for kind, shape in _SHAPES:
        if isinstance(exc, kind):
            extra = {"provider": exc.provider, **shape.fields(exc)}
            if shape.code == "model_not_found":
                extra["available_models"] = available_models or []
            headers = _retry_header(extra.get("retry_after")) if shape.retry_header else None
            return ApiError(
                shape.status, shape.code, exc.message, type=shape.type, headers=headers, **extra
            )
    return _provider_error(exc)


def _provider_error(exc: upstream.ProviderError) -> ApiError:
    vendor: dict[str, Any] = {"type": type(exc).__name__, "message": exc.message, "code": None}
    if isinstance(exc, upstream.UpstreamHTTPError):
        vendor = {
            "type": exc.vendor_type or "upstream_error",
            "message": exc.message,
            "code": exc.vendor_code or str(exc.status),
        }
    return ApiError(
        502,
        "provider_error",
        f"The provider {exc.provider} failed: {exc.message}",
        type="provider_error",
        provider=exc.provider,
        provider_error=vendor,
    )


def provider_unavailable(provider: str | None, message: str, retry_after: int | None) -> ApiError:
    """The spec's 503 `provider_unavailable`, with `Retry-After` (the one place it is built:
    a vendor's own 503, a chain with no usable candidate, `auto` with nothing to route to)."""
    return ApiError(
        503,
        "provider_unavailable",
        message,
        type="provider_error",
        headers=_retry_header(retry_after),
        provider=provider,
        status_url="/v1/status",
        retry_after=retry_after or 1,
    )


def _retry_header(retry_after: int | None) -> dict[str, str]:
    return {"retry-after": str(retry_after or 1)}
