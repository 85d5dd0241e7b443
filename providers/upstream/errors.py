"""The upstream clients' one error hierarchy, shaped like httpx's transport errors.

Both clients raise only these (`raise Mapped(...) from exc` for lower-level failures);
`providers.http` turns them into the `providers.errors` classes the gateway knows.
"""

from __future__ import annotations


class UpstreamError(Exception):
    """Base class: the exchange with the upstream failed below HTTP semantics."""


class InvalidRequest(UpstreamError):
    """The request cannot be sent as given: an unsupported URL, a header with CR or LF."""


class Timeout(UpstreamError):
    """A limit the client itself enforces ran out (the connect timeout, httpx's timeouts)."""


class ConnectError(UpstreamError):
    """No connection could be opened: DNS, refusal, unreachable host, TLS handshake."""


class ConnectTimeout(ConnectError, Timeout):
    """Opening the connection took longer than the connect timeout."""


class WriteError(UpstreamError):
    """The connection broke while the request was being sent."""


class ReadError(UpstreamError):
    """The connection broke (reset, I/O error) while the response was being read."""


StreamBroken = ReadError


class ProtocolError(UpstreamError):
    """The upstream broke HTTP/1.1: a malformed response, or the connection closed before
    the response (or its body) was complete."""
