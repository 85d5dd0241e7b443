"""Both upstream clients against the real simulator: keep-alive, early exits, cancellation,
the pool bound, the adapters on top; and the lean client's TLS against a local server."""

from __future__ import annotations

import datetime
import gc
import json
import ssl
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gateway.app.server import upstream_client
from gateway.platform.config import Settings
from providers.base import ProviderEndpoint
from providers.errors import StreamInterrupted, UpstreamUnavailable
from providers.openai import OpenAIProvider
from providers.sim.core import Fault
from providers.sim.server import SimConfig, SimServer, serve_simulator
from providers.types import ChatRequest
from providers.upstream import ConnectError, HttpxUpstream, LeanUpstream, Upstream
from providers.upstream.transport import Origin, TlsTransport, connect

MODEL = "gpt-4o-mini"
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-test"}


def chat_body(*, stream: bool = False, max_tokens: int = 5) -> bytes:
    messages = [{"role": "user", "content": "hello"}]
    payload = {"model": MODEL, "messages": messages, "stream": stream, "max_tokens": max_tokens}
    return json.dumps(payload).encode()


async def start_sim(nursery: trio.Nursery, config: SimConfig | None = None) -> SimServer:
    config = config or SimConfig()
    server: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, config)
    return server


def chat_url(sim: SimServer) -> str:
    return sim.base_url("openai") + "/v1/chat/completions"


def make_client(kind: str, limit: int = 512) -> Upstream:
    if kind == "httpx":
        limits = httpx.Limits(max_connections=limit)
        return HttpxUpstream(httpx.AsyncClient(limits=limits, timeout=None))
    return LeanUpstream(max_connections_per_host=limit)


@pytest.fixture(params=["lean", "httpx"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Upstream]:
    upstream = make_client(request.param)
    try:
        yield upstream
    finally:
        await upstream.aclose()


async def test_sequential_requests_share_one_connection(
    nursery: trio.Nursery, client: Upstream
) -> None:
    sim = await start_sim(nursery)
    for _ in range(10):
        response = await client.request("POST", chat_url(sim), HEADERS, chat_body())
        assert response.status == 200
        assert response.headers["content-type"] == "application/json"
        assert json.loads(response.body)["object"] == "chat.completion"
    async with client.stream("POST", chat_url(sim), HEADERS, chat_body(stream=True)) as stream:
        body = await stream.read()
    assert body.rstrip().endswith(b"data: [DONE]")
    models = await client.request("GET", sim.base_url("openai") + "/v1/models", HEADERS)
    assert models.status == 200
    assert sim.stats.connections_total == 1
    assert sim.stats.requests_total == 12


async def test_leaving_a_stream_early_closes_its_connection(
    nursery: trio.Nursery, client: Upstream, autojump_clock: trio.testing.MockClock
) -> None:
    sim = await start_sim(nursery, SimConfig(ttft_ms=10, tokens_per_second=100))
    async with client.stream("POST", chat_url(sim), HEADERS, chat_body(stream=True)) as stream:
        async for _ in stream:
            break
    await trio.testing.wait_all_tasks_blocked()
    assert sim.stats.client_disconnects == 1
    assert sim.stats.open_connections == 0
    gc.collect()  # nothing left for the collector (warnings are errors)


async def test_cancelling_mid_body_closes_the_connection_and_frees_the_slot(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    sim = await start_sim(nursery, SimConfig(ttft_ms=10, tokens_per_second=10))
    client = LeanUpstream(max_connections_per_host=1)
    body = chat_body(stream=True, max_tokens=50)  # five seconds of tokens
    with trio.move_on_after(0.5) as scope:
        async with client.stream("POST", chat_url(sim), HEADERS, body) as s:
            async for _ in s:
                pass
    assert scope.cancelled_caught
    await trio.testing.wait_all_tasks_blocked()
    assert sim.stats.client_disconnects == 1
    with trio.fail_after(5):  # the only slot was given back
        assert (await client.request("POST", chat_url(sim), HEADERS, chat_body())).status == 200
    assert sim.stats.connections_total == 2
    await client.aclose()


async def test_cancelling_a_whole_request_closes_the_connection(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    sim = await start_sim(nursery, SimConfig(ttft_ms=1000))
    client = LeanUpstream()
    with trio.move_on_after(0.5):
        await client.request("POST", chat_url(sim), HEADERS, chat_body())
    assert client.pool(chat_url(sim)).idle_count == 0
    # The simulator notices only when it answers (it watches for hang-ups in streams).
    await trio.sleep(1)
    await trio.testing.wait_all_tasks_blocked()
    assert sim.stats.open_connections == 0
    await client.aclose()


@pytest.mark.parametrize("kind", ["lean", "httpx"])
async def test_the_pool_bound_holds_under_three_times_the_load(
    nursery: trio.Nursery, kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    sim = await start_sim(nursery, SimConfig(ttft_ms=50))
    client = make_client(kind, limit=4)
    statuses: list[int] = []
    peak = 0

    async def one() -> None:
        nonlocal peak
        response = await client.request("POST", chat_url(sim), HEADERS, chat_body())
        statuses.append(response.status)
        peak = max(peak, sim.stats.open_connections)

    async with trio.open_nursery() as load:
        for _ in range(12):
            load.start_soon(one)
    assert statuses == [200] * 12
    assert sim.stats.connections_total == 4
    assert peak == 4
    await client.aclose()


async def test_aclose_closes_pooled_connections(nursery: trio.Nursery, client: Upstream) -> None:
    sim = await start_sim(nursery)
    await client.request("POST", chat_url(sim), HEADERS, chat_body())
    assert sim.stats.open_connections == 1
    await client.aclose()
    await trio.testing.wait_all_tasks_blocked()
    assert sim.stats.open_connections == 0


# -- the adapters on top ------------------------------------------------------------------


def openai_adapter(sim: SimServer, client: Upstream) -> OpenAIProvider:
    return OpenAIProvider(client, ProviderEndpoint("openai", sim.base_url("openai") + "/v1", "k"))


def ask() -> ChatRequest:
    return ChatRequest(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4)


async def test_adapter_chat_and_stream(nursery: trio.Nursery, client: Upstream) -> None:
    sim = await start_sim(nursery)
    adapter = openai_adapter(sim, client)
    whole = await adapter.chat(ask())
    async with adapter.chat_stream(ask()) as chunks:
        streamed = "".join([chunk.content or "" async for chunk in chunks])
    assert streamed == whole.content
    assert sim.stats.connections_total == 1


async def test_adapter_maps_a_cut_stream(nursery: trio.Nursery, client: Upstream) -> None:
    sim = await start_sim(nursery)
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=1))
    adapter = openai_adapter(sim, client)
    with pytest.raises(StreamInterrupted):
        async with adapter.chat_stream(ask()) as chunks:
            async for _ in chunks:
                pass


async def test_adapter_maps_a_refused_connection(client: Upstream) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        adapter = OpenAIProvider(client, ProviderEndpoint("openai", url, "k"))
        with pytest.raises(UpstreamUnavailable):
            await adapter.chat(ask())


def test_the_setting_picks_the_client() -> None:
    assert isinstance(upstream_client(Settings()), LeanUpstream)
    chosen = upstream_client(Settings(upstream_client="httpx"))
    assert isinstance(chosen, HttpxUpstream)


# -- TLS ------------------------------------------------------------------------------------


def certificates(directory: Path) -> tuple[Path, Path, bytes]:
    """A throwaway CA and a `localhost` certificate it signed: (cert, key, CA PEM)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path, ca.public_bytes(serialization.Encoding.PEM)


async def start_tls_server(
    nursery: trio.Nursery, tmp_path: Path, seen_names: list[str | None]
) -> tuple[int, bytes]:
    cert, key, ca_pem = certificates(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: seen_names.append(name)

    async def handle(tcp: trio.SocketStream) -> None:
        stream = trio.SSLStream(tcp, context, server_side=True)
        buffer = b""
        try:
            while b"\r\n\r\n" not in buffer:
                buffer += await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
            await stream.receive_some(65536)  # until the client leaves
        except trio.BrokenResourceError:
            pass
        finally:
            await trio.aclose_forcefully(stream)

    listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
    return listeners[0].socket.getsockname()[1], ca_pem


async def test_https_verifies_the_certificate_and_sends_sni(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    seen: list[str | None] = []
    port, ca_pem = await start_tls_server(nursery, tmp_path, seen)
    trusting = ssl.create_default_context(cadata=ca_pem.decode())
    client = LeanUpstream(ssl_context=trusting)
    response = await client.request("GET", f"https://localhost:{port}/x", {})
    assert response.body == b"secret"
    assert seen == ["localhost"]
    await client.aclose()


async def test_https_refuses_an_unknown_certificate_authority(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    port, _ = await start_tls_server(nursery, tmp_path, [])
    client = LeanUpstream()  # the system's trust store: our test CA is not in it
    with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await client.request("GET", f"https://localhost:{port}/", {})
    await client.aclose()


async def test_an_https_origin_gets_an_ssl_stream_named_after_the_host(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    port, ca_pem = await start_tls_server(nursery, tmp_path, [])
    context = ssl.create_default_context(cadata=ca_pem.decode())
    origin = Origin("https", "localhost", port, f"localhost:{port}")
    transport = await connect(origin, context, 5.0)
    assert isinstance(transport, TlsTransport)
    assert transport.stream.server_hostname == "localhost"
    assert transport.stream.context.verify_mode == ssl.CERT_REQUIRED
    transport.close()
