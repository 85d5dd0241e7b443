"""The SSRF guard for every URL the gateway calls on a user's behalf (webhooks, alerts).

A user-supplied URL must not let a caller reach the gateway's own network: loopback,
private ranges, link-local (and the cloud metadata address 169.254.169.254 within it),
unspecified, multicast or any other non-global address is refused. The guard resolves the
name itself and the caller then connects to the address it checked (`Destination.ip`),
never resolving a second time, so a name that changes its answer between check and
connection (DNS rebinding) gains nothing. It runs at creation and again before every
delivery attempt. At creation a name that does not resolve (yet) is accepted
(`check_registration`): it reaches no address, so it is no risk, and a registration must
not depend on the gateway's own DNS at that moment (a hook set up before its record, an
offline resolver); each delivery then checks it again and fails while it does not
resolve. Hosts named in the operator's allow-list skip the address check (tests
point webhooks at a local receiver this way); they are still resolved once per attempt.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import attrs
import httpx
import trio

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
SCHEMES = ("http", "https")


class UnsafeUrl(Exception):
    """A URL the gateway will not call; the message says why (safe to show the owner)."""

    def __init__(self, message: str, *, code: str = "unsafe_webhook_url") -> None:
        super().__init__(message)
        self.code = code


class Unresolved(UnsafeUrl):
    """A well-formed DNS name that gives no address now (may later: see the module)."""


@attrs.frozen
class Destination:
    """A checked URL: where to connect (`ip`) and what to ask for there."""

    url: httpx.URL
    ip: str

    def request_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address (no second lookup)."""
        return self.url.copy_with(host=self.ip)

    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")

    def extensions(self) -> dict[str, Any]:
        """TLS is verified against the name, not the address."""
        return {"sni_hostname": self.url.host} if self.url.scheme == "https" else {}


def allow_list(raw: str) -> frozenset[str]:
    """The operator's allow-list setting: comma-separated host names or addresses."""
    return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())


def refusal(ip: IpAddress) -> str | None:
    """Why an address may not be called, or None when it is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal(ip.ipv4_mapped)
    for name in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    if not ip.is_global:
        return "not globally routable"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (trio runs it in a thread)."""
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def parse_url(raw: str) -> httpx.URL:
    """A URL with an http(s) scheme and a host, or `UnsafeUrl` (code `invalid_webhook_url`)."""
    try:
        url = httpx.URL(raw)
        host = url.host  # decodes an IDNA A-label: UnicodeError when it is not one
    except (httpx.InvalidURL, TypeError, UnicodeError) as exc:
        raise UnsafeUrl(f"Not a valid URL: {exc}", code="invalid_webhook_url") from None
    if url.scheme not in SCHEMES:
        raise UnsafeUrl("Only http and https URLs are allowed.", code="invalid_webhook_url")
    if not host:
        raise UnsafeUrl("The URL has no host.", code="invalid_webhook_url")
    if url.userinfo:
        raise UnsafeUrl("Credentials in the URL are not allowed.", code="invalid_webhook_url")
    return url


async def check_url(
    raw: str, allowed_hosts: Collection[str], resolve: Resolver = system_resolver
) -> Destination:
    """Resolve and check `raw`; the `Destination` to connect to, or `UnsafeUrl`.

    Every address of the name must be safe (one bad answer refuses it: a resolver may
    rotate them). Cancellation: the lookup is abandoned with the caller.
    """
    url = parse_url(raw)
    host = url.host
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        literal: IpAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    addresses = [host] if literal is not None else await _lookup(resolve, host, port)
    if host.lower() not in allowed_hosts:
        for address in addresses:
            reason = refusal(ipaddress.ip_address(address.split("%", 1)[0]))
            if reason is not None:
                raise UnsafeUrl(f"The URL's host {host} resolves to a {reason} address.")
    return Destination(url, addresses[0])


async def check_registration(
    raw: str, allowed_hosts: Collection[str], resolve: Resolver = system_resolver
) -> None:
    """The check at creation: `check_url`, except that a name which does not resolve
    within `REGISTRATION_LOOKUP_S` is accepted (each delivery checks it again)."""
    with trio.move_on_after(REGISTRATION_LOOKUP_S):
        with contextlib.suppress(Unresolved):
            await check_url(raw, allowed_hosts, resolve)
        return
    parse_url(raw)  # the lookup timed out: the URL must still be well formed


REGISTRATION_LOOKUP_S = 5.0


async def _lookup(resolve: Resolver, host: str, port: int) -> list[str]:
    try:
        addresses = await resolve(host, port)
    except UnicodeError:  # no DNS name at all (an empty or over-long label)
        raise UnsafeUrl(
            f"The URL's host {host} is not a valid DNS name.", code="invalid_webhook_url"
        ) from None
    except OSError:
        addresses = []
    if not addresses:
        raise Unresolved(f"The URL's host {host} does not resolve.", code="invalid_webhook_url")
    return addresses
