"""Circuit breakers shared by every worker and node through a Redis-protocol server.

Each process keeps its own `BreakerBook` and decides from it alone, so the request path
never waits for the server. What is shared is the breakers' transitions:

- A process reports what it saw (`report`): every failure that is the provider's fault,
  and a success only when its own breaker was not clean (it had failures, or was open),
  so the healthy path sends nothing. A report is one atomic script (`RECORD`): failures
  are counted across the fleet (the count lives `window_s` after the last failure and a
  reported success clears it); reaching the threshold, or a failed half-open probe,
  opens the breaker on the server (the sorted set `<prefix>brk:open`, scored by when
  its cooldown ends) and publishes it; a success closes an open one and publishes that.
- Every process listens (`listen`) and applies what is published to its own book: an
  opening trips the local breaker for the cooldown that remains, a closing resets it.
  On (re)subscribing it reads the openings still running (`OPENS`), so one missed while
  disconnected is made up for.

The server's clock decides when an opening ends; messages carry the time that remains,
so nodes with skewed clocks agree. Every key expires once its state is over.

Failure policy: breakers fall back to local. Reports are sent from a bounded channel by
a worker and dropped when the server is away (logged); each process's own breakers keep
counting its own failures as they always did, so a provider that fails is still skipped,
only no longer fleet-wide. In half-open state each process lets its own probe through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

import attrs
import trio

from gateway.platform import broadcast
from gateway.platform.resp import RedisClient, RedisReplyError, RedisUnavailable, Script
from gateway.upstream.circuit import COOLDOWN_S, FAILURE_THRESHOLD, BreakerBook

logger = logging.getLogger(__name__)

REPORT_QUEUE = 1024
SEPARATOR = "\n"  # between workspace, provider and model: none of them holds a newline

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: fails opens; ARGV: ok(1/0) member threshold cooldown_ms window_ms channel probe(1/0)
# Publishes `1 <remaining_ms> <member>` (opened) or `0 0 <member>` (closed).
RECORD = Script(
    _NOW
    + """
local fails, opens = KEYS[1], KEYS[2]
local member, threshold = ARGV[2], tonumber(ARGV[3])
local cooldown, window, channel = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
redis.call('ZREMRANGEBYSCORE', opens, '-inf', now)
if ARGV[1] == '1' then
  redis.call('DEL', fails)
  if redis.call('ZREM', opens, member) == 1 then
    redis.call('PUBLISH', channel, '0 0 ' .. member)
  end
  return 0
end
local n = redis.call('INCR', fails)
redis.call('PEXPIRE', fails, window)
if (n >= threshold or ARGV[7] == '1') and not redis.call('ZSCORE', opens, member) then
  redis.call('ZADD', opens, now + cooldown, member)
  local last = redis.call('ZRANGE', opens, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', opens, tonumber(last[2]) + 1000)
  redis.call('DEL', fails)
  redis.call('PUBLISH', channel, '1 ' .. cooldown .. ' ' .. member)
  return 1
end
return 0
"""
)

# KEYS: opens. Reply: {member, remaining_ms, member, remaining_ms, ...}
OPENS = Script(
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local found = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #found, 2 do
  out[#out + 1] = found[i]
  out[#out + 1] = tonumber(found[i + 1]) - now
end
return out
"""
)


@attrs.frozen
class Report:
    workspace_id: str
    provider_id: str
    model: str
    ok: bool
    probe: bool = False  # a failure of a half-open probe: open again at once


def member(workspace_id: str, provider_id: str, model: str) -> str:
    return SEPARATOR.join((workspace_id, provider_id, model))


@attrs.define(eq=False)
class SharedBreakers:
    """Reports this process's breaker outcomes and applies everyone's transitions."""

    client: RedisClient
    prefix: str = "gw:"
    timeout_s: float = 2.0
    threshold: int = FAILURE_THRESHOLD
    cooldown_s: float = COOLDOWN_S
    window_s: float = COOLDOWN_S
    clock: Callable[[], float] = trio.current_time
    dropped: int = attrs.field(default=0, init=False)
    _send: trio.MemorySendChannel[Report] = attrs.field(init=False)
    _receive: trio.MemoryReceiveChannel[Report] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[Report](REPORT_QUEUE)

    @property
    def channel(self) -> str:
        return self.prefix + "brk"

    def report(self, report: Report) -> None:
        """Queue one outcome for the server; never waits (dropped when the queue is full)."""
        try:
            self._send.send_nowait(report)
        except trio.WouldBlock:
            self.dropped += 1

    async def reporter(self) -> None:
        """Send queued reports until cancelled; one that fails is dropped (logged).
        Cancellation: the report being sent may be lost."""
        async for item in self._receive:
            await self._send_report(item)

    async def _send_report(self, item: Report) -> None:
        name = member(item.workspace_id, item.provider_id, item.model)
        keys = [f"{self.prefix}brk:fails:{name}", f"{self.prefix}brk:open"]
        args: list[bytes | str | int | float] = [
            "1" if item.ok else "0",
            name,
            self.threshold,
            int(self.cooldown_s * 1000),
            int(self.window_s * 1000),
            self.channel,
            "1" if item.probe else "0",
        ]
        try:
            with trio.fail_after(self.timeout_s):
                await self.client.run_script(RECORD, keys, args)
        except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
            self.dropped += 1
            logger.warning("could not share a breaker outcome (local breakers only): %s", exc)

    async def listen(
        self, book: BreakerBook, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Apply published transitions to `book` until cancelled; reconnect (reading the
        openings still running) after the server went away. Ready once subscribed, or
        after the first failed attempt (the server may be down at start)."""

        async def heard(message: str) -> None:
            self.apply(book, message)

        await broadcast.follow(
            self.client,
            self.channel,
            what="breaker",
            resync=partial(self._load_opens, book),
            apply=heard,
            task_status=task_status,
        )

    async def _load_opens(self, book: BreakerBook) -> None:
        with trio.fail_after(self.timeout_s):
            reply = await self.client.run_script(OPENS, [f"{self.prefix}brk:open"], [])
        if not isinstance(reply, list):
            return
        for index in range(0, len(reply) - 1, 2):
            name, remaining = reply[index], reply[index + 1]
            if isinstance(name, bytes) and isinstance(remaining, int):
                self.apply(book, f"1 {remaining} {name.decode(errors='replace')}")

    def apply(self, book: BreakerBook, message: str) -> None:
        """One published transition (`1 <remaining_ms> <member>` or `0 0 <member>`)."""
        opened, remaining_ms, name = [*message.split(" ", 2), "", ""][:3]
        parts = name.split(SEPARATOR)
        if len(parts) != 3 or not remaining_ms.lstrip("-").isdigit():
            logger.warning("ignored a malformed breaker message: %r", message)
            return
        breaker = book.breaker(*parts)
        if opened == "1":
            breaker.trip(self.clock(), int(remaining_ms) / 1000)
        else:
            breaker.reset(self.clock())
