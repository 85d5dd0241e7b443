"""Exact per-key limits shared through Redis by two gateways (one trio loop, one store).

The same proofs with real processes are in `test_processes.py`; these run in process so
that the limiter's behaviour is tested quickly and with its internals at hand.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import httpx
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from gateway.platform.resp import RedisClient
from gateway.upstream.limits import RateLimitExceeded
from gateway.upstream.limits.shared import (
    SETTLE_BATCH,
    SETTLE_LINGER_S,
    SharedHold,
    SharedLimiter,
)
from providers.types import Usage
from store import keys
from store.keys import ApiKeyRecord
from store.secrets import new_api_key
from tests.gateway.conftest import ADMIN_KEY
from tests.scaleout.helpers import CHAT_BODY, KEYS, create_key, fire, fire_until_refused
from tests.scaleout.redis_server import RedisServer


async def start(nursery: trio.Nursery, settings: Settings) -> RunningGateway:
    running: RunningGateway = await nursery.start(
        lambda task_status: run_gateway(settings, env={}, task_status=task_status)
    )
    return running


@pytest.fixture
async def pair(nursery: trio.Nursery, shared_settings: Settings) -> list[RunningGateway]:
    """Two gateways on two ports sharing one store and one Redis."""
    return [await start(nursery, shared_settings), await start(nursery, shared_settings)]


async def test_rpm_is_exact_across_two_gateways(pair: list[RunningGateway]) -> None:
    _, secret = await create_key(pair[0].url, {"rpm": 100})
    outcomes = await fire([g.url for g in pair], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "rate_limit_exceeded"): 200}


async def test_daily_limit_is_exact_across_two_gateways(pair: list[RunningGateway]) -> None:
    _, secret = await create_key(pair[0].url, {"daily_requests": 100})
    outcomes = await fire([g.url for g in pair], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "daily_limit_exceeded"): 200}


async def test_a_revocation_reaches_the_other_gateway_within_a_second(
    pair: list[RunningGateway],
) -> None:
    key_id, secret = await create_key(pair[0].url, {})
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(timeout=30) as http:
        for gateway in pair:  # both have authenticated (and hold) the key
            ok = await http.post(gateway.url + "/v1/chat/completions", json=CHAT_BODY, headers=auth)
            assert ok.status_code == 200, ok.text
        revoked = await http.post(
            f"{pair[0].url}{KEYS}/{key_id}/revoke",
            headers={"authorization": f"Bearer {ADMIN_KEY}"},
        )
        assert revoked.status_code == 200, revoked.text
        with trio.fail_after(1.0):
            while True:
                answer = await http.post(
                    pair[1].url + "/v1/chat/completions", json=CHAT_BODY, headers=auth
                )
                if answer.status_code == 401:
                    break
                assert answer.status_code == 200, answer.text
        assert answer.json()["error"]["code"] == "invalid_api_key"


async def test_concurrency_is_exact_across_two_gateways(
    nursery: trio.Nursery, shared_settings: Settings
) -> None:
    # Answers take 60 s: the 290 refusals must come while the 10 admitted still run.
    slow = attrs.evolve(shared_settings, sim_ttft_ms=60_000)
    pair = [await start(nursery, slow), await start(nursery, slow)]
    _, secret = await create_key(pair[0].url, {"concurrent": 10})
    outcomes = await fire_until_refused([g.url for g in pair], secret, 300, refused=290)
    assert outcomes == {(429, "concurrent_limit_exceeded"): 290}


async def test_redis_stopped_refuses_with_503_then_recovers(
    nursery: trio.Nursery, shared_settings: Settings, redis_server: RedisServer
) -> None:
    gateway = await start(nursery, shared_settings)
    _, secret = await create_key(gateway.url, {"rpm": 100})
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=auth, timeout=30) as http:
        assert (await http.post("/v1/chat/completions", json=CHAT_BODY)).status_code == 200
        redis_server.stop()
        refused = await http.post("/v1/chat/completions", json=CHAT_BODY)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "limits_unavailable"
        assert error["type"] and error["message"]
        assert refused.headers["retry-after"] == "1"
        redis_server.start()
        back = await http.post("/v1/chat/completions", json=CHAT_BODY)
        assert back.status_code == 200, back.text
        assert back.headers["x-ratelimit-remaining-requests"] == "99"  # a fresh server


async def test_redis_stopped_with_fail_open_admits_without_limits(
    nursery: trio.Nursery, shared_settings: Settings, redis_server: RedisServer
) -> None:
    gateway = await start(nursery, attrs.evolve(shared_settings, redis_fail_open=True))
    _, secret = await create_key(gateway.url, {"rpm": 1})
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=auth, timeout=30) as http:
        assert (await http.post("/v1/chat/completions", json=CHAT_BODY)).status_code == 200
        limited = await http.post("/v1/chat/completions", json=CHAT_BODY)
        assert limited.status_code == 429
        redis_server.stop()
        for _ in range(3):
            answer = await http.post("/v1/chat/completions", json=CHAT_BODY)
            assert answer.status_code == 200, answer.text
            assert "x-ratelimit-remaining-requests" not in answer.headers


def limited_key(**limits: int) -> ApiKeyRecord:
    return keys.new_record(
        new_api_key("prod"),
        workspace_id="ws_default",
        name="leased",
        kind="prod",
        permissions=["chat"],
        now=datetime.now(UTC),
        rate_limits=limits,
    )


async def test_a_crashed_workers_slot_expires_with_its_lease(redis_server: RedisServer) -> None:
    client = RedisClient.from_url(redis_server.url)
    try:
        crashed = SharedLimiter(client, lease_s=0.3)
        survivor = SharedLimiter(client, lease_s=0.3)
        key = limited_key(concurrent=1)
        await crashed.acquire(key, 10)  # never released: its worker "crashed"
        with pytest.raises(RateLimitExceeded) as refused:
            await survivor.acquire(key, 10)
        assert refused.value.limit_type == "concurrent"
        # Nobody renews the crashed hold: the queued request gets the slot once it expires.
        hold = await survivor.wait_for_capacity(key, 10, max_wait_s=30)
        assert isinstance(hold, SharedHold)
    finally:
        client.close()


async def test_a_renewed_lease_keeps_its_slot(redis_server: RedisServer) -> None:
    client = RedisClient.from_url(redis_server.url)
    try:
        alive = SharedLimiter(client, lease_s=0.3)
        other = SharedLimiter(client, lease_s=0.3)
        key = limited_key(concurrent=1)
        await alive.acquire(key, 10)
        for _ in range(5):  # well past the lease, renewed each time
            await alive.renew_leases()
            with pytest.raises(RateLimitExceeded):
                await other.acquire(key, 10)
            await trio.sleep(0.1)
    finally:
        client.close()


async def test_the_rate_limit_view_shows_what_every_gateway_took(
    pair: list[RunningGateway],
) -> None:
    _, secret = await create_key(pair[0].url, {"rpm": 100, "daily_requests": 50})
    outcomes = await fire([pair[0].url], secret, 3)
    assert outcomes == {(200, ""): 3}
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=pair[1].url, headers=auth, timeout=30) as http:
        view = await http.get("/v1/management/rate-limits")
    assert view.status_code == 200, view.text
    assert view.json()["api_key"]["rpm"]["remaining"] == 97
    assert view.json()["api_key"]["daily"]["remaining"] == 47


async def _script_calls(client: RedisClient) -> int:
    """EVALSHA and EVAL calls the server has run so far (`INFO commandstats`)."""
    reply = await client.execute("INFO", "commandstats")
    assert isinstance(reply, bytes)
    calls = 0
    for line in reply.decode().splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            calls += int(line.split("calls=", 1)[1].split(",", 1)[0])
    return calls


async def test_the_ends_of_one_keys_requests_are_settled_in_one_call(
    redis_server: RedisServer,
) -> None:
    """Counting work: 20 requests of one key that ended together cost one round trip to
    settle (not 20), and every slot and token count comes back as it should."""
    client = RedisClient.from_url(redis_server.url)
    try:
        limiter = SharedLimiter(client)
        key = limited_key(concurrent=20)
        warm = await limiter.acquire(key, 10)  # the script is on the server from now on
        warm.release()
        await limiter.settle_pending()
        holds = [await limiter.acquire(key, 10) for _ in range(20)]
        assert (await limiter.current(key)).inflight == 20
        for hold in holds:
            hold.settle(Usage(3, 4))
            hold.release()
        before = await _script_calls(client)
        await limiter.settle_pending()
        assert await _script_calls(client) - before == 1
        after = await limiter.current(key)
        assert after.inflight == 0
        assert after.tokens_used == 10 + 20 * 7  # the warm-up's reservation, then real counts
    finally:
        client.close()


async def test_an_admission_carries_the_ends_of_its_keys_requests(
    redis_server: RedisServer,
) -> None:
    """Counting work: a request that ended is settled by the next admission of its key
    in the same script (one round trip for both, none for the settle workers), and its
    concurrency slot is free for that very admission."""
    client = RedisClient.from_url(redis_server.url)
    try:
        limiter = SharedLimiter(client)
        key = limited_key(concurrent=1)
        first = await limiter.acquire(key, 10)
        assert isinstance(first, SharedHold)
        first.settle(Usage(3, 4))
        first.release()
        before = await _script_calls(client)
        second = await limiter.acquire(key, 10)  # the slot is free: the end came along
        assert isinstance(second, SharedHold)
        assert await _script_calls(client) - before == 1
        after = await limiter.current(key)
        assert after.inflight == 1
        assert after.tokens_used == 7 + 10  # the first's real count, the second's estimate
        before = await _script_calls(client)
        await limiter.settle_pending()
        assert await _script_calls(client) - before == 0  # nothing was left to send
        assert limiter.dropped == 0
    finally:
        client.close()


async def test_ends_no_admission_carries_are_sent_after_the_linger(
    redis_server: RedisServer,
) -> None:
    client = RedisClient.from_url(redis_server.url)
    try:
        limiter = SharedLimiter(client)
        key = limited_key(concurrent=1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(limiter.settle_worker)
            hold = await limiter.acquire(key, 10)
            assert isinstance(hold, SharedHold)
            hold.release()
            await trio.sleep(SETTLE_LINGER_S + 0.5)  # the linger, and a wide margin to send
            assert (await limiter.current(key)).inflight == 0
            nursery.cancel_scope.cancel()
        assert limiter.dropped == 0
    finally:
        client.close()


async def test_an_admission_carries_at_most_one_batch_of_ends(
    redis_server: RedisServer,
) -> None:
    """A request's own script stays small: of 100 queued ends of its key, the admission
    carries `SETTLE_BATCH` and leaves the rest to the settle workers."""
    client = RedisClient.from_url(redis_server.url)
    try:
        limiter = SharedLimiter(client)
        key = limited_key(concurrent=200)
        holds = [await limiter.acquire(key, 10) for _ in range(100)]
        for hold in holds:
            hold.settle(Usage(3, 4))
            hold.release()
        await limiter.acquire(key, 10)
        assert (await limiter.current(key)).inflight == 1 + 100 - SETTLE_BATCH
        await limiter.settle_pending()
        assert (await limiter.current(key)).inflight == 1
        assert limiter.dropped == 0
    finally:
        client.close()
