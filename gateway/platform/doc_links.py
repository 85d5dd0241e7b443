"""The gateway's own base URL for the links it gives out (each error's `doc_url`).

`GATEWAY_PUBLIC_BASE_URL` when it is set: behind a proxy or a load balancer, the address
clients use is not one the gateway can see. Otherwise each request's own scheme and `Host`
header, which is how that client reached the gateway (a missing or malformed `Host` falls
back to the address the connection was accepted on). A `Host` is the client's own word, but
it only shapes the links in the answer to that client, and nothing that holds one is cached
or shown to anyone else.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from gateway.platform.errors import doc_base

Scope = dict[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?")
_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


def public_base_url(value: str | None) -> str | None:
    """The `public_base_url` setting, checked: an http(s) URL with a host and no query or
    fragment, kept without its trailing slash (a path prefix is allowed, for a gateway
    served under one)."""
    if value is None or not value.strip():
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(
            f"public_base_url must be an http(s) URL such as https://ai.example.com, not {value!r}"
        )
    return value.strip().rstrip("/")


def base_of(scope: Scope) -> str:
    """`scheme://host[:port]` as the client of this request reached the gateway."""
    scheme = _SCHEMES.get(str(scope.get("scheme", "http")), "http")
    host = next(
        (value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"host"),
        "",
    )
    if not _HOST.fullmatch(host):
        host = _server_address(scope)
    return f"{scheme}://{host}"


def _server_address(scope: Scope) -> str:
    server = scope.get("server")
    if not server:
        return "localhost"
    address, port = server[0], server[1]
    address = f"[{address}]" if ":" in str(address) else str(address)
    return address if port is None else f"{address}:{port}"


class DocLinks:
    """ASGI middleware: sets `doc_base` for each request (HTTP and WebSocket) that `app`
    answers, and restores it afterwards."""

    def __init__(self, app: App, public_base: str | None) -> None:
        self.app = app
        self.public_base = public_base

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        # The request's own base only when an error asks for it (`doc_url`).
        token = doc_base.set(self.public_base or functools.partial(base_of, scope))
        try:
            await self.app(scope, receive, send)
        finally:
            doc_base.reset(token)
