"""Keep-alive connections to one origin, bounded, reused most-recent first.

A `HostPool` hands out *slots* (a trio semaphore: at most `limit` exchanges at once,
waiters served first come, first served) and keeps up to `max_idle` connections
between exchanges. A new connection is opened only when no idle one is left, so the
connections open to an origin never outnumber its slots.
"""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urlsplit

import trio

from providers.upstream.errors import InvalidRequest
from providers.upstream.transport import Origin, Transport

_DEFAULT_PORTS = {"http": 80, "https": 443}
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)", re.DOTALL)


def split_url(url: str) -> tuple[str, str, str]:
    """(scheme, authority, target) of an absolute URL; the target may be empty."""
    match = _URL.fullmatch(url)
    if match is None:
        raise InvalidRequest(f"not an absolute http(s) URL: {url[:80]!r}")
    scheme, authority, target = match.groups()
    return scheme.lower(), authority, target


def parse_origin(scheme: str, authority: str) -> Origin:
    """The origin named by a URL's scheme and authority (`user@host:port`)."""
    if scheme not in _DEFAULT_PORTS:
        raise InvalidRequest(f"unsupported URL scheme {scheme!r}")
    try:
        parts = urlsplit(f"{scheme}://{authority}")
        port = parts.port
    except ValueError as exc:
        raise InvalidRequest(f"bad URL authority {authority[:80]!r}") from exc
    host = parts.hostname
    if not host:
        raise InvalidRequest(f"no host in URL authority {authority[:80]!r}")
    host_header = authority.rpartition("@")[2]
    return Origin(scheme, host, port or _DEFAULT_PORTS[scheme], host_header)


class HostPool:
    """The connections to one origin (see the module docstring)."""

    __slots__ = ("_expiry", "_idle", "_max_idle", "_slots", "closed", "origin")

    def __init__(self, origin: Origin, limit: int, max_idle: int, expiry: float) -> None:
        self.origin = origin
        self._slots = trio.Semaphore(limit)
        self._idle: deque[tuple[Transport, float]] = deque()
        self._max_idle = max_idle
        self._expiry = expiry
        self.closed = False

    async def acquire(self) -> None:
        """Wait for a free slot (FIFO). A checkpoint only when it has to wait."""
        try:
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            await self._slots.acquire()

    def release(self) -> None:
        self._slots.release()

    def take_idle(self) -> Transport | None:
        """The most recently used idle connection that is still open, if any."""
        idle = self._idle
        if not idle:
            return None
        oldest_allowed = trio.current_time() - self._expiry
        while idle:
            transport, since = idle.pop()
            if since >= oldest_allowed and transport.idle_usable():
                return transport
            transport.close()
        return None

    def put_back(self, transport: Transport) -> None:
        """Keep a connection whose exchange ended cleanly, or close it if not wanted."""
        if self.closed or len(self._idle) >= self._max_idle:
            transport.close()
            return
        now = trio.current_time()
        idle = self._idle
        while idle and idle[0][1] < now - self._expiry:
            idle.popleft()[0].close()
        idle.append((transport, now))

    @property
    def idle_count(self) -> int:
        return len(self._idle)

    def close(self) -> None:
        """Close the idle connections; those in use close when released."""
        self.closed = True
        while self._idle:
            self._idle.pop()[0].close()
