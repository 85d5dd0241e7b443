"""The script runner and unavailable policy shared by the key limits and the agent
counters (`gateway.upstream.limits.shared`): every failure of the server becomes
`SharedUnavailable` within the deadline, and the policy turns it into the 503 or a
logged admission."""

from __future__ import annotations

import logging
from typing import cast

import pytest
import trio
from trio.testing import MockClock

from gateway.platform.errors import ApiError
from gateway.platform.resp import RedisClient, RedisReplyError, Reply, Script
from gateway.upstream.limits.shared import SharedUnavailable, admit_unchecked, run_shared_script
from tests.scaleout.redis_server import RedisServer, free_port

ECHO = Script("return {KEYS[1], ARGV[1]}")
FAILS = Script("return redis.error_reply('ERR no budget')")


class _Silent:
    """A server that takes the script and never answers."""

    async def run_script(
        self, script: Script, keys: list[str], args: list[bytes | str | int | float]
    ) -> Reply:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_script_answers_through_the_runner(redis_server: RedisServer) -> None:
    client = RedisClient.from_url(redis_server.url)
    try:
        reply = await run_shared_script(client, ECHO, ["k"], ["v"], timeout_s=2.0)
        assert reply == [b"k", b"v"]
        with pytest.raises(SharedUnavailable, match="no budget") as failed:
            await run_shared_script(client, FAILS, [], [], timeout_s=2.0)
        assert isinstance(failed.value.__cause__, RedisReplyError)
    finally:
        client.close()


async def test_a_missing_server_is_shared_unavailable() -> None:
    client = RedisClient.from_url(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(SharedUnavailable):
        await run_shared_script(client, ECHO, ["k"], ["v"], timeout_s=2.0)


async def test_a_silent_server_is_unavailable_at_the_deadline(autojump_clock: MockClock) -> None:
    client = cast(RedisClient, _Silent())
    start = trio.current_time()
    with pytest.raises(SharedUnavailable, match="TooSlowError"):
        await run_shared_script(client, ECHO, ["k"], ["v"], timeout_s=2.0)
    assert trio.current_time() - start == 2.0


def test_the_closed_policy_refuses_with_the_503() -> None:
    with pytest.raises(ApiError) as refused:
        admit_unchecked(SharedUnavailable("down"), fail_open=False, log="counters unavailable")
    assert (refused.value.status, refused.value.code) == (503, "limits_unavailable")
    assert isinstance(refused.value.__cause__, SharedUnavailable)


def test_the_open_policy_admits_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        admit_unchecked(SharedUnavailable("down"), fail_open=True, log="counters unavailable")
    assert "counters unavailable: down" in caplog.messages
