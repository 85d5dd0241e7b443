"""The address policy for providers, and both upstream clients holding to it on a real
loopback connection: refused before a byte is sent, allowed when the policy or its allow
list lets the address through."""

from __future__ import annotations

import httpx
import pytest
import trio

from providers.upstream import ConnectError, HttpxUpstream, LeanUpstream, Upstream
from providers.upstream.guard import AddressPolicy, RefusedAddress, upstream_policy
from providers.upstream.httpx_upstream import GuardedNetworkBackend, guarded_transport
from tests.providers.listeners import recording_listener

ALLOW = upstream_policy("allow", "")


def no_content(head: bytes) -> bytes:
    return b"HTTP/1.1 204 No Content\r\n\r\n"


DENY = upstream_policy("deny", "")


@pytest.mark.parametrize(
    ("policy", "host", "address", "reason"),
    [
        (ALLOW, "api.example.com", "93.184.216.34", None),
        (ALLOW, "localhost", "127.0.0.1", None),
        (ALLOW, "models.lan", "10.0.0.5", None),
        (ALLOW, "models.lan", "fd12::5", None),
        (ALLOW, "tailnet", "100.64.1.2", None),
        (ALLOW, "0.0.0.0", "0.0.0.0", None),
        (ALLOW, "x", "169.254.169.254", "link-local"),
        (ALLOW, "x", "169.254.1.1", "link-local"),
        (ALLOW, "x", "fe80::1", "link-local"),
        (ALLOW, "x", "fd00:ec2::254", "cloud metadata"),
        (ALLOW, "x", "100.100.100.200", "cloud metadata"),
        (ALLOW, "x", "::ffff:169.254.169.254", "link-local"),
        (ALLOW, "metadata.google.internal", "93.184.216.34", "cloud metadata"),
        (ALLOW, "x", "224.0.0.1", "multicast"),
        (DENY, "localhost", "127.0.0.1", "loopback"),
        (DENY, "x", "10.0.0.5", "private"),
        (DENY, "x", "::1", "loopback"),
        (DENY, "api.example.com", "93.184.216.34", None),
        (upstream_policy("deny", "localhost"), "localhost", "127.0.0.1", None),
        (upstream_policy("allow", "169.254.169.254"), "169.254.169.254", "169.254.169.254", None),
        (upstream_policy("deny", "localhost"), "127.0.0.1", "127.0.0.1", "loopback"),
    ],
)
def test_the_policy_table(
    policy: AddressPolicy, host: str, address: str, reason: str | None
) -> None:
    assert policy.refusal(host, address) == reason


def clients(policy: AddressPolicy) -> list[Upstream]:
    limits = httpx.Limits(max_connections=4)
    httpx_client = httpx.AsyncClient(transport=guarded_transport(policy, limits))
    return [LeanUpstream(address_policy=policy), HttpxUpstream(httpx_client, policy)]


async def test_both_clients_refuse_a_denied_address_before_a_byte_is_sent(
    nursery: trio.Nursery,
) -> None:
    seen: list[bytes] = []
    port = await nursery.start(recording_listener, seen, no_content)
    for client in clients(DENY):
        with pytest.raises(ConnectError, match="loopback"):
            await client.request("GET", f"http://127.0.0.1:{port}/", {"authorization": "secret"})
        with pytest.raises(RefusedAddress):
            await client.open_tcp("127.0.0.1", port)
        await client.aclose()
    assert all(received == b"" for received in seen)  # connected, then closed unspoken


async def test_both_clients_reach_an_allowed_address(nursery: trio.Nursery) -> None:
    seen: list[bytes] = []
    port = await nursery.start(recording_listener, seen, no_content)
    for client in [*clients(ALLOW), *clients(upstream_policy("deny", "127.0.0.1"))]:
        answer = await client.request("GET", f"http://127.0.0.1:{port}/", {})
        assert answer.status == 204
        await client.aclose()
    assert len(seen) == 4 and all(b"GET / HTTP/1.1" in s for s in seen)


def test_the_httpx_transport_wraps_its_pools_network_backend() -> None:
    """`guarded_transport` reaches into httpcore's pool: this fails the day it moves."""
    transport = guarded_transport(DENY, httpx.Limits())
    assert isinstance(transport._pool._network_backend, GuardedNetworkBackend)
