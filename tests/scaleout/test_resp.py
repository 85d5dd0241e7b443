"""The RESP2 client: the pure reply parser with bytes, the client against redis-server."""

from __future__ import annotations

import pytest
import trio

from gateway.platform.resp import (
    RedisAddress,
    RedisClient,
    RedisReplyError,
    RedisUnavailable,
    ReplyReader,
    Script,
    encode_command,
)
from tests.scaleout.redis_server import RedisServer, free_port


def test_commands_are_arrays_of_bulk_strings() -> None:
    assert encode_command(("SET", "k", 12)) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n"


@pytest.mark.parametrize(
    ("wire", "reply"),
    [
        (b"+OK\r\n", b"OK"),
        (b":-42\r\n", -42),
        (b"$5\r\nhe\r\nl\r\n", b"he\r\nl"),
        (b"$-1\r\n", None),
        (b"*-1\r\n", None),
        (b"*3\r\n:1\r\n*1\r\n$1\r\nx\r\n$0\r\n\r\n", [1, [b"x"], b""]),
    ],
)
def test_replies_parse_whole_or_byte_by_byte(wire: bytes, reply: object) -> None:
    whole = ReplyReader()
    whole.feed(wire)
    assert whole.next_reply() == (True, reply)
    split = ReplyReader()
    for index in range(len(wire)):
        assert split.next_reply() == (False, None)
        split.feed(wire[index : index + 1])
    assert split.next_reply() == (True, reply)


def test_an_error_reply_is_returned_as_an_error() -> None:
    reader = ReplyReader()
    reader.feed(b"-NOSCRIPT No matching script\r\n+OK\r\n")
    done, error = reader.next_reply()
    assert done and isinstance(error, RedisReplyError)
    assert str(error).startswith("NOSCRIPT")
    assert reader.next_reply() == (True, b"OK")


def test_addresses_parse_from_urls() -> None:
    address = RedisAddress.parse("redis://user:s%40cret@cache.internal:6380/2")
    assert (address.host, address.port, address.db) == ("cache.internal", 6380, 2)
    assert (address.username, address.password) == ("user", "s@cret")
    assert "s@cret" not in repr(address)
    assert RedisAddress.parse("redis://127.0.0.1").port == 6379
    with pytest.raises(ValueError, match="redis://"):
        RedisAddress.parse("http://127.0.0.1:6379")


async def test_commands_scripts_and_messages(redis_server: RedisServer) -> None:
    client = RedisClient.from_url(redis_server.url, max_connections=2)
    try:
        assert await client.execute("SET", "k", "v") == b"OK"
        assert await client.execute("GET", "k") == b"v"
        with pytest.raises(RedisReplyError):
            await client.execute("INCR", "k")
        script = Script("return {KEYS[1], ARGV[1]}")
        assert await client.run_script(script, ["a"], ["b"]) == [b"a", b"b"]  # EVAL
        assert await client.run_script(script, ["c"], ["d"]) == [b"c", b"d"]  # EVALSHA
        async with client.subscribe("news") as subscription:
            await client.publish("news", "revoked")
            with trio.fail_after(5):
                async for message in subscription:
                    assert message == b"revoked"
                    break
    finally:
        client.close()


async def test_a_missing_server_is_unavailable() -> None:
    client = RedisClient.from_url(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(RedisUnavailable):
        await client.execute("PING")


async def test_idle_connections_the_server_closed_are_not_reused(redis_server: RedisServer) -> None:
    # A restarted server (or one that dropped idle clients) leaves dead connections in the
    # pool: the next command must go out on a fresh one, not fail while the server is up.
    client = RedisClient.from_url(redis_server.url, max_connections=4)
    try:
        async with trio.open_nursery() as nursery:  # fill the pool with four idle ones
            for _ in range(4):
                nursery.start_soon(client.execute, "PING")
        redis_server.stop()
        redis_server.start()
        assert await client.execute("PING") == b"PONG"
        assert await client.execute("SET", "k", "v") == b"OK"
    finally:
        client.close()
