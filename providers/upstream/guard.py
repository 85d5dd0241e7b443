"""The address guard for every URL the gateway calls that a user chose: webhooks and
alerts, and providers' `settings.base_url`. A kernel of its own (here, below every layer
that calls out: `gateway.status` for webhooks, the upstream clients for providers).

An `AddressPolicy` says which addresses may be called. Webhooks' (`webhook_policy`): none but
public unicast ones: loopback, private ranges, link-local (and the cloud metadata address
169.254.169.254 within it), unspecified, multicast or any other non-global address is
refused. Providers' (`upstream_policy`, set only by the operator): link-local and cloud
metadata addresses always (169.254.0.0/16, fe80::/10, `fd00:ec2::254`, 100.100.100.200,
`metadata.google.internal` and the like), multicast and reserved ones too; loopback and
private ranges are allowed by default (a model server on the operator's own machine or
network) and refused with `GATEWAY_UPSTREAM_PRIVATE_ADDRESSES=deny`. Hosts (or addresses)
the operator lists skip the address check (`allow_list`: `GATEWAY_WEBHOOK_ALLOWED_HOSTS`,
`GATEWAY_UPSTREAM_ALLOWED_HOSTS`).

Where it is checked: when a URL is set (`check_registration`: a name that does not
resolve yet is accepted, since it reaches no address) and again when it is called. A
webhook's delivery resolves the name itself and connects to the address it checked
(`Destination.ip`), never resolving a second time, so a name that changes its answer
between check and connection (DNS rebinding) gains nothing. The upstream clients check
the address each new connection actually reached (`open_checked_tcp`, and
`GuardedNetworkBackend` in `httpx_upstream`), before a byte is sent: no second lookup, no
lookup at all on the hot path (a pooled connection's address was checked when it was
opened), and a redirect, which neither client follows, could only lead to another
connection checked the same way.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable
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
    """An operator's allow-list setting: comma-separated host names or addresses."""
    return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())


def refusal(ip: IpAddress) -> str | None:
    """Why an address is not public, or None when it is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal(ip.ipv4_mapped)
    for name in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    if not ip.is_global:
        return "not globally routable"
    return None


# Cloud instance metadata services: where a credential-bearing request must never go.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)
# What a policy that allows private addresses still refuses: nothing listens there for us.
_NEVER = frozenset({"link-local", "multicast", "reserved"})


@attrs.frozen
class AddressPolicy:
    """Which addresses a user's URL may reach (see the module). `private`: loopback,
    private, unspecified and other non-global unicast ranges are allowed; link-local,
    metadata, multicast and reserved addresses never are. `allowed_hosts` are exempt."""

    private: bool = False
    allowed_hosts: frozenset[str] = frozenset()

    def refusal(self, host: str, address: str) -> str | None:
        """Why `host`, reached at `address`, may not be called; None when it may. The
        allow list names hosts as the URL does (a name, or an address literal)."""
        host = host.lower().rstrip(".")
        if host in self.allowed_hosts:
            return None
        if host in METADATA_HOSTS:
            return "cloud metadata"
        ip = _unmapped(ipaddress.ip_address(address.split("%", 1)[0]))
        reason = refusal(ip)
        if self.private and reason not in _NEVER:
            return "cloud metadata" if ip in METADATA_ADDRESSES else None
        return reason


def webhook_policy(allowed_hosts: str) -> AddressPolicy:
    """Webhooks' policy: public addresses only, but for the operator's allow list."""
    return AddressPolicy(private=False, allowed_hosts=allow_list(allowed_hosts))


def upstream_policy(private_addresses: str, allowed_hosts: str) -> AddressPolicy:
    """Providers' policy from the operator's two settings (`allow` or `deny`, and the
    allow list)."""
    return AddressPolicy(
        private=private_addresses != "deny", allowed_hosts=allow_list(allowed_hosts)
    )


def _unmapped(ip: IpAddress) -> IpAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


class RefusedAddress(OSError):
    """A connection the address policy refused once it saw where it led."""


async def open_checked_tcp(policy: AddressPolicy, host: str, port: int) -> trio.SocketStream:
    """A TCP connection to `host`, closed and refused (`RefusedAddress`) unless the
    address it reached is one `policy` allows: checked before any byte is sent, on the
    address actually connected to. Cancellation closes what was opened."""
    tcp = await trio.open_tcp_stream(host, port)
    address = str(tcp.socket.getpeername()[0])
    reason = policy.refusal(host, address)
    if reason is not None:
        tcp.socket.close()
        raise RefusedAddress(f"{host} resolves to a {reason} address ({address}), refused")
    return tcp


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
    raw: str, policy: AddressPolicy, resolve: Resolver = system_resolver
) -> Destination:
    """Resolve and check `raw`; the `Destination` to connect to, or `UnsafeUrl`.

    Every address of the name must be allowed (one bad answer refuses it: a resolver may
    rotate them). Cancellation: the lookup is abandoned with the caller.
    """
    url = parse_url(raw)
    host = url.host
    port = url.port or (443 if url.scheme == "https" else 80)
    _check_name(policy, host)
    try:
        literal: IpAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    addresses = [host] if literal is not None else await _lookup(resolve, host, port)
    for address in addresses:
        reason = policy.refusal(host, address)
        if reason is not None:
            raise UnsafeUrl(f"The URL's host {host} resolves to a {reason} address.")
    return Destination(url, addresses[0])


async def check_registration(
    raw: str, policy: AddressPolicy, resolve: Resolver = system_resolver
) -> None:
    """The check when a URL is set: `check_url`, except that a name which does not
    resolve within `REGISTRATION_LOOKUP_S` is accepted (each call checks it again)."""
    with trio.move_on_after(REGISTRATION_LOOKUP_S):
        with contextlib.suppress(Unresolved):
            await check_url(raw, policy, resolve)
        return
    _check_name(policy, parse_url(raw).host)  # the lookup timed out: the name alone


def _check_name(policy: AddressPolicy, host: str) -> None:
    """A cloud metadata service's name is refused before it is looked up."""
    name = host.lower().rstrip(".")
    if name in METADATA_HOSTS and name not in policy.allowed_hosts:
        raise UnsafeUrl(f"The URL's host {host} is a cloud metadata service.")


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
