"""Issue 34's proof: two gateway nodes on two ports, each with its own data folder, sharing
one PostgreSQL store, one Redis and one blob directory (as two machines would, the
directory being a mount): one truth whichever node a request reaches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio
from cryptography.fernet import Fernet

from tests.gateway.conftest import ADMIN_KEY
from tests.postgres_server import PostgresServer
from tests.scaleout.helpers import CHAT_BODY, KEYS, create_key, fire
from tests.scaleout.processes import GatewayProcess, start_gateway, wait_ready
from tests.scaleout.redis_server import RedisServer

ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
USAGE = "/v1/management/analytics/usage"
AUDIT = "/v1/management/audit-log"


@pytest.fixture
def two_nodes(
    tmp_path: Path, redis_server: RedisServer, postgres_server: PostgresServer
) -> Iterator[list[GatewayProcess]]:
    """Node A and node B, started at the same moment: whichever migrates first, the other
    waits on the migration lock and finds the schema ready."""
    shared = {
        "GATEWAY_DATABASE_URL": postgres_server.new_database(),
        "GATEWAY_BLOB_DIR": str(tmp_path / "shared-blobs"),
        # Provider credentials are encrypted with the deployment's key: one for all nodes.
        "GATEWAY_SECRET_KEY": Fernet.generate_key().decode(),
    }
    nodes = [
        start_gateway(tmp_path / name, redis_server.url, extra_env=shared)
        for name in ("node-a", "node-b")
    ]
    try:
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def _client(node: GatewayProcess, secret: str = ADMIN_KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=node.url + "/v1", api_key=secret, max_retries=0)


async def _ready(nodes: list[GatewayProcess]) -> None:
    async with trio.open_nursery() as nursery:
        for node in nodes:
            nursery.start_soon(wait_ready, node)


async def _requests_seen(http: httpx.AsyncClient, node: GatewayProcess) -> int:
    page = await http.get(node.url + USAGE, headers=ADMIN)
    assert page.status_code == 200, page.text
    return int(page.json()["totals"]["requests"])


async def test_a_key_made_on_one_node_works_on_the_other_and_dies_on_both(
    two_nodes: list[GatewayProcess],
) -> None:
    node_a, node_b = two_nodes
    await _ready(two_nodes)
    key_id, secret = await create_key(node_a.url, {})
    async with _client(node_b, secret) as on_b:  # at once: no wait, no retry
        answer = await on_b.chat.completions.create(**CHAT_BODY)
    assert answer.choices[0].message.content
    async with httpx.AsyncClient(timeout=30) as http:
        revoked = await http.post(f"{node_b.url}{KEYS}/{key_id}/revoke", headers=ADMIN)
        assert revoked.status_code == 200, revoked.text
        auth = {"authorization": f"Bearer {secret}"}
        with trio.fail_after(1.0):  # published by B, applied by A's listener
            while True:
                refused = await http.post(
                    node_a.url + "/v1/chat/completions", json=CHAT_BODY, headers=auth
                )
                if refused.status_code == 401:
                    break
        # One audit log: B's revocation and A's creation, read through either node.
        for node in two_nodes:
            log = await http.get(node.url + AUDIT, headers=ADMIN)
            assert log.status_code == 200, log.text
            mine = [e["type"] for e in log.json()["events"] if e["target"]["id"] == key_id]
            assert mine == ["api_key.revoked", "api_key.created"]


async def test_a_provider_disabled_on_one_node_is_not_used_by_the_other(
    two_nodes: list[GatewayProcess],
) -> None:
    """Each process keeps the providers in memory; the configuration channel makes the
    other node read them again from the store (without it, B would go on routing to a
    provider the workspace disabled through A)."""
    node_a, node_b = two_nodes
    await _ready(two_nodes)
    async with httpx.AsyncClient(timeout=30, headers=ADMIN) as http:
        forced = CHAT_BODY | {"provider": "openai"}
        assert (
            await http.post(node_b.url + "/v1/chat/completions", json=forced)
        ).status_code == 200
        disabled = await http.post(node_a.url + "/v1/management/providers/openai/disable")
        assert disabled.status_code == 200, disabled.text
        with trio.fail_after(5):  # published by A, read from the store by B
            refused = await _answered(http, node_b.url + "/v1/chat/completions", forced, 400)
        assert refused.json()["error"]["code"] == "provider_not_configured"
        enabled = await http.post(node_b.url + "/v1/management/providers/openai/enable")
        assert enabled.status_code == 200, enabled.text
        with trio.fail_after(5):
            await _answered(http, node_a.url + "/v1/chat/completions", forced, 200)


async def _answered(
    http: httpx.AsyncClient, url: str, body: dict[str, Any], status: int
) -> httpx.Response:
    """Send `body` until the answer has `status` (the caller bounds the wait)."""
    while True:
        answer = await http.post(url, json=body)
        if answer.status_code == status:
            return answer
        await trio.sleep(0.05)


async def test_usage_from_both_nodes_is_in_either_nodes_analytics(
    two_nodes: list[GatewayProcess],
) -> None:
    await _ready(two_nodes)
    _, secret = await create_key(two_nodes[0].url, {})
    outcomes = await fire([node.url for node in two_nodes], secret, 40)
    assert outcomes == {(200, ""): 40}
    async with httpx.AsyncClient(timeout=30) as http:
        # The usage writers commit within a batch interval; the rollups are the sum of
        # both nodes' batches.
        with trio.fail_after(10):
            while True:
                seen = [await _requests_seen(http, node) for node in two_nodes]
                if min(seen) >= 40:
                    break
                await trio.sleep(0.1)
        assert seen == [40, 40]


async def test_a_file_uploaded_through_one_node_downloads_through_the_other(
    two_nodes: list[GatewayProcess],
) -> None:
    node_a, node_b = two_nodes
    await _ready(two_nodes)
    content = b"one truth, two machines\n" * 100
    async with _client(node_a) as on_a, _client(node_b) as on_b:
        uploaded = await on_a.files.create(file=("notes.txt", content), purpose="assistants")
        assert (await on_b.files.retrieve(uploaded.id)).bytes == len(content)
        assert (await on_b.files.content(uploaded.id)).content == content
        await on_b.files.delete(uploaded.id)
        with pytest.raises(openai.NotFoundError):
            await on_a.files.retrieve(uploaded.id)


async def test_a_node_killed_under_load_loses_nothing_it_answered(
    two_nodes: list[GatewayProcess],
) -> None:
    """Node A serves chat traffic, key creations and uploads; it is killed with SIGKILL
    in the middle. Every key and file whose creation A answered is there through B
    (docs/durability.md: a management change and an upload are committed before their
    answer); B keeps serving."""
    node_a, node_b = two_nodes
    await _ready(two_nodes)
    _, secret = await create_key(node_a.url, {})
    made: list[str] = []
    uploaded: list[str] = []
    under_way = trio.Event()  # enough answered creations to prove something

    def note() -> None:
        if len(made) >= 10 and len(uploaded) >= 3:
            under_way.set()

    async def keys_on_a(http: httpx.AsyncClient) -> None:
        for index in range(1_000):
            answer = await http.post(node_a.url + KEYS, json={"name": f"k{index}"}, headers=ADMIN)
            made.append(answer.json()["id"])
            note()

    async def files_on_a(on_a: openai.AsyncOpenAI) -> None:
        for index in range(1_000):
            body = f"file {index}\n".encode() * 200
            uploaded.append(
                (await on_a.files.create(file=("f.txt", body), purpose="assistants")).id
            )
            note()

    async def chat_on_a(http: httpx.AsyncClient) -> None:
        auth = {"authorization": f"Bearer {secret}"}
        for index in range(1_000):
            body = CHAT_BODY | {"messages": [{"role": "user", "content": f"load {index}"}]}
            await http.post(node_a.url + "/v1/chat/completions", json=body, headers=auth)

    async with httpx.AsyncClient(timeout=30) as http, _client(node_a) as on_a:
        async with trio.open_nursery() as nursery:
            for load in (keys_on_a, chat_on_a, chat_on_a):
                nursery.start_soon(_until_the_kill, load, http)
            nursery.start_soon(_until_the_kill, files_on_a, on_a)
            with trio.fail_after(60):
                await under_way.wait()
            os.kill(node_a.process.pid, signal.SIGKILL)
        node_a.process.wait()
        listed = await http.get(node_b.url + KEYS, params={"limit": 100}, headers=ADMIN)
        assert listed.status_code == 200, listed.text
        for key_id in made:
            one = await http.get(f"{node_b.url}{KEYS}/{key_id}", headers=ADMIN)
            assert one.status_code == 200, (key_id, one.text)
    async with _client(node_b) as on_b:
        for file_id in uploaded:
            assert (await on_b.files.content(file_id)).content.startswith(b"file ")
        answer = await on_b.chat.completions.create(**CHAT_BODY)
        assert answer.choices[0].message.content


async def _until_the_kill(load: Any, client: Any) -> None:
    """Run `load` until its node dies: the request cut by the kill is not an answer."""
    try:
        await load(client)
    except (httpx.TransportError, openai.APIConnectionError):
        return


def test_a_shared_store_without_a_shared_master_key_refuses_to_start(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "gateway", "serve", "--port", "0"]
    command += ["--data-dir", str(tmp_path / "data")]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).parents[2]),
        "GATEWAY_DATABASE_URL": "postgresql://gateway@127.0.0.1:1/none",
    }
    result = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert result.returncode == 2
    assert b"GATEWAY_SECRET_KEY" in result.stderr
    assert not (tmp_path / "data").exists()  # refused before touching anything
