"""The one error hierarchy every provider adapter raises.

Adapters map whatever went wrong upstream (an HTTP status with the vendor's error body,
a timeout, a refused connection, a stream cut short) to one of these classes, with
`raise Mapped(...) from exc`, so that the gateway turns each into the spec's error
envelope without knowing any vendor. `retryable` tells fallback chains whether
another attempt may succeed.
"""

from __future__ import annotations

from typing import Any


class ProviderError(Exception):
    """Base class: something went wrong talking to provider `provider`."""

    retryable = False

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.message = message


class UpstreamHTTPError(ProviderError):
    """The upstream answered with an error we have no closer mapping for."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int,
        vendor_type: str | None = None,
        vendor_code: str | None = None,
    ) -> None:
        super().__init__(provider, message)
        self.status = status
        self.vendor_type = vendor_type
        self.vendor_code = vendor_code

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status >= 500 or self.status in (408, 409)


class UpstreamTimeout(ProviderError):
    """No (further) answer within the deadline."""

    retryable = True

    def __init__(self, provider: str, message: str, *, timeout_ms: int) -> None:
        super().__init__(provider, message)
        self.timeout_ms = timeout_ms


class UpstreamUnavailable(ProviderError):
    """The upstream could not be reached or said it is unavailable."""

    retryable = True

    def __init__(self, provider: str, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(provider, message)
        self.retry_after = retry_after


class ModelOverloaded(ProviderError):
    """The upstream throttled us (429) or said the model is overloaded."""

    retryable = True

    def __init__(
        self, provider: str, message: str, *, model: str, retry_after: int | None = None
    ) -> None:
        super().__init__(provider, message)
        self.model = model
        self.retry_after = retry_after


class ModelNotFound(ProviderError):
    def __init__(self, provider: str, message: str, *, model: str) -> None:
        super().__init__(provider, message)
        self.model = model


class ContextLengthExceeded(ProviderError):
    def __init__(
        self,
        provider: str,
        message: str,
        *,
        model: str,
        max_tokens: int | None = None,
        requested_tokens: int | None = None,
    ) -> None:
        super().__init__(provider, message)
        self.model = model
        self.max_tokens = max_tokens
        self.requested_tokens = requested_tokens


class ContentFiltered(ProviderError):
    def __init__(self, provider: str, message: str, *, filter_reason: str) -> None:
        super().__init__(provider, message)
        self.filter_reason = filter_reason


class InvalidUpstreamRequest(ProviderError):
    """The upstream rejected a parameter; `param`/`value` name it when the vendor said."""

    def __init__(
        self, provider: str, message: str, *, param: str | None = None, value: Any = None
    ) -> None:
        super().__init__(provider, message)
        self.param = param
        self.value = value


class AuthenticationFailed(ProviderError):
    """The upstream refused our credentials for this provider (a configuration fault)."""


class StreamInterrupted(ProviderError):
    """A stream ended or broke before its final event."""

    retryable = True


class Unsupported(ProviderError):
    """This provider does not offer the operation that was asked of it."""


def refuse_top_k(provider: str, top_k: int | None) -> None:
    """For adapters whose vendor has no `top_k` setting (OpenAI, Mistral): a request that
    sets it is refused naming it, never served without it."""
    if top_k is not None:
        raise InvalidUpstreamRequest(
            provider, f"The provider {provider} has no 'top_k' setting.", param="top_k", value=top_k
        )
