"""The response cache on a Redis-protocol server, for several workers and nodes.

With `redis_url` set, an answer cached by one worker must be a hit on every other, so the
answers live on the server (`SET <prefix>cache:<key> <json> PX <ttl>`): the server's own
expiry replaces the in-memory LRU's TTLs, and its `maxmemory` policy (run it with
`allkeys-lru` or `volatile-lru`) replaces the LRU's bounds. An answer bigger than
`max_bytes` is not kept, as in memory.

Failure policy: the cache is an optimisation, never a reason to fail a request. A read
that fails or takes longer than `timeout_s` is a miss; a write never waits at all (it
goes through a bounded channel to `writer`, run by `gateway.workers.shared_state`, and
is dropped when the channel is full or the server is away). The hit counters
(`CacheStats`) stay per process: the analytics cache page reads the usage log.
"""

from __future__ import annotations

import json
import logging

import attrs
import cattrs
import trio

from gateway.chat.cache.store import is_cacheable
from gateway.platform.resp import RedisClient, RedisReplyError, RedisUnavailable
from providers.types import ChatResult

logger = logging.getLogger(__name__)

WRITE_QUEUE = 1024
_converter = cattrs.Converter()


def encode_result(result: ChatResult) -> bytes:
    """One answer as compact JSON (its usage included: a hit reports what it saved)."""
    return json.dumps(_converter.unstructure(result), separators=(",", ":")).encode()


def decode_result(data: bytes) -> ChatResult:
    return _converter.structure(json.loads(data), ChatResult)


@attrs.frozen
class _Write:
    key: str
    data: bytes
    ttl_ms: int


@attrs.define(eq=False)
class SharedResponseCache:
    """Answers by cache key on the server (see the module docstring)."""

    client: RedisClient
    prefix: str = "gw:"
    timeout_s: float = 2.0
    max_bytes: int = 64 * 1024 * 1024
    dropped: int = attrs.field(default=0, init=False)
    _send: trio.MemorySendChannel[_Write] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[_Write] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[_Write](WRITE_QUEUE)

    def _name(self, key: str) -> str:
        return f"{self.prefix}cache:{key}"

    async def get(self, key: str) -> ChatResult | None:
        """The answer under `key`, or None: also when the server fails or is slower than
        `timeout_s` (a miss, logged). Cancellation: nothing to undo."""
        reply: object = None
        try:
            with trio.move_on_after(self.timeout_s) as scope:
                reply = await self.client.execute("GET", self._name(key))
        except (RedisUnavailable, RedisReplyError) as exc:
            logger.warning("shared cache unavailable, answering as a miss: %s", exc)
            return None
        if scope.cancelled_caught:
            logger.warning("shared cache slower than %.1f s, answering as a miss", self.timeout_s)
        if not isinstance(reply, bytes):
            return None
        try:
            return decode_result(reply)
        except (ValueError, cattrs.BaseValidationError) as exc:
            logger.warning("unreadable shared cache entry %s: %s", key, exc)
            return None

    def put(self, key: str, result: ChatResult, *, ttl_s: float) -> bool:
        """Queue `result` to be kept for `ttl_s`; False when it is not kept (the rules of
        the in-memory cache, or the write queue is full). Never waits."""
        if ttl_s <= 0 or not is_cacheable(result):
            return False
        data = encode_result(result)
        if len(data) > self.max_bytes:
            return False
        try:
            self._send.send_nowait(_Write(self._name(key), data, max(1, int(ttl_s * 1000))))
        except trio.WouldBlock:
            self.dropped += 1
            return False
        return True

    async def writer(self) -> None:
        """Send queued answers until cancelled; a failed write is dropped (logged).
        Cancellation: the write being sent may be lost (a later miss stores it again)."""
        async for write in self._receive:
            try:
                with trio.fail_after(self.timeout_s):
                    await self.client.execute("SET", write.key, write.data, "PX", write.ttl_ms)
            except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
                self.dropped += 1
                logger.warning("could not store an answer in the shared cache: %s", exc)
