"""HTTP clients towards the upstream providers, behind one small interface (`base`).

`LeanUpstream` (HTTP/1.1 on raw trio sockets, the default) and `HttpxUpstream` (httpx,
for HTTP/2 or proxies) both implement `Upstream`; the app picks one by the
`upstream_client` setting.
"""

from providers.upstream.base import (
    FixedHeaders,
    RequestBody,
    StreamedBody,
    Upstream,
    UpstreamResponse,
    UpstreamStream,
)
from providers.upstream.errors import (
    ConnectError,
    ConnectTimeout,
    InvalidRequest,
    ProtocolError,
    ReadError,
    StreamBroken,
    Timeout,
    UpstreamError,
    WriteError,
)
from providers.upstream.httpx_upstream import HttpxUpstream
from providers.upstream.lean import LeanUpstream

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "FixedHeaders",
    "HttpxUpstream",
    "InvalidRequest",
    "LeanUpstream",
    "ProtocolError",
    "ReadError",
    "RequestBody",
    "StreamBroken",
    "StreamedBody",
    "Timeout",
    "Upstream",
    "UpstreamError",
    "UpstreamResponse",
    "UpstreamStream",
    "WriteError",
]
