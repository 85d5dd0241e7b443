"""The realtime analytics counters shared by every worker and node (Redis-protocol server).

Without a shared server the realtime page reads the last minute from the node's usage log
and the gauges (requests in flight, requests queued for capacity) from its own process.
With several workers each would show its own share, so here:

- Each request's figures are added to a per-workspace sum in the process (`count`, O(1),
  no I/O) and sent by `flusher` in one script call (`FLUSH`) at most every
  `FLUSH_INTERVAL_S`: whatever accumulated meanwhile goes in the next (group commit).
  The server adds them to its current second's bucket (`<prefix>rt:<workspace>:<second>`,
  expiring after two minutes), so the server's clock places them.
- Each process publishes its gauges every `HEARTBEAT_S` (`beat`) under a key that
  expires after `GAUGE_TTL_S`: a dead worker's gauges vanish within seconds.
- `read` sums the last sixty seconds' buckets and every live process's gauges in one
  script (`READ`); the reading process's own gauges are taken live.

Failure policy: the counters are best effort. A flush that fails is dropped (logged),
and a `read` that fails or is slower than `timeout_s` returns None: the page then shows
this node's figures as without Redis.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

import attrs
import trio

from gateway.platform.resp import RedisClient, RedisReplyError, RedisUnavailable, Script
from store.usage import UsageRecord

logger = logging.getLogger(__name__)

HEARTBEAT_S = 1.0
# At most this often a process sends its figures (a reader sends its own first), so the
# server sees ten calls a second per process at any request rate.
FLUSH_INTERVAL_S = 0.1
GAUGE_TTL_S = 3.0
BUCKET_TTL_S = 120

_NOW = """
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# ARGV: prefix bucket_ttl_s, then per workspace: id requests tokens cost_usd ok latency_ms
FLUSH = Script(
    _NOW
    + """
for i = 3, #ARGV, 6 do
  local k = ARGV[1] .. 'rt:' .. ARGV[i] .. ':' .. sec
  redis.call('HINCRBY', k, 'r', ARGV[i + 1])
  redis.call('HINCRBY', k, 't', ARGV[i + 2])
  redis.call('HINCRBYFLOAT', k, 'c', ARGV[i + 3])
  redis.call('HINCRBY', k, 'ok', ARGV[i + 4])
  redis.call('HINCRBYFLOAT', k, 'l', ARGV[i + 5])
  redis.call('EXPIRE', k, ARGV[2])
end
return 1
"""
)

# KEYS: workers-set; ARGV: prefix worker active queue ttl_ms
BEAT = Script(
    _NOW
    + """
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) + 1000)
redis.call('SET', ARGV[1] .. 'rt:g:' .. ARGV[2], ARGV[3] .. ' ' .. ARGV[4], 'PX', ARGV[5])
return 1
"""
)

# KEYS: workers-set; ARGV: prefix workspace
# Reply: {requests, tokens, cost, ok, latency, {worker, gauges, worker, gauges, ...}}
READ = Script(
    _NOW
    + """
local r, tk, c, ok, l = 0, 0, 0, 0, 0
for s = sec - 59, sec do
  local v = redis.call('HMGET', ARGV[1] .. 'rt:' .. ARGV[2] .. ':' .. s, 'r', 't', 'c', 'ok', 'l')
  r = r + (tonumber(v[1]) or 0)
  tk = tk + (tonumber(v[2]) or 0)
  c = c + (tonumber(v[3]) or 0)
  ok = ok + (tonumber(v[4]) or 0)
  l = l + (tonumber(v[5]) or 0)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local gauges = {}
for _, w in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local g = redis.call('GET', ARGV[1] .. 'rt:g:' .. w)
  if g then
    gauges[#gauges + 1] = w
    gauges[#gauges + 1] = g
  end
end
return {r, tk, tostring(c), ok, tostring(l), gauges}
"""
)


@attrs.define
class _Sums:
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    ok: int = 0
    latency_ms: float = 0.0  # of the successful requests (the page's average)


@attrs.frozen
class LiveFigures:
    """The last minute and the gauges of every live process, as the realtime page shows."""

    requests: int
    tokens: int
    cost_usd: float
    avg_latency_ms: float | None
    active_requests: int
    queue_depth: int


Gauges = tuple[int, int]  # (requests in flight, requests queued for capacity)


@attrs.define(eq=False)
class SharedRealtime:
    """This process's share of the realtime counters (see the module docstring)."""

    client: RedisClient
    prefix: str = "gw:"
    timeout_s: float = 2.0
    worker_id: str = attrs.field(factory=lambda: secrets.token_hex(6))
    dropped: int = attrs.field(default=0, init=False)
    _pending: dict[str, _Sums] = attrs.field(factory=dict, init=False)
    _wake: trio.Event = attrs.field(factory=trio.Event, init=False)

    @property
    def _workers(self) -> str:
        return f"{self.prefix}rt:workers"

    def count(self, record: UsageRecord) -> None:
        """Add one request's figures (no I/O; `flusher` sends them)."""
        sums = self._pending.get(record.workspace_id)
        if sums is None:
            sums = self._pending[record.workspace_id] = _Sums()
        sums.requests += 1
        sums.tokens += record.prompt_tokens + record.completion_tokens
        sums.cost_usd += record.cost_usd
        if record.status < 400:
            sums.ok += 1
            sums.latency_ms += record.latency_ms
        self._wake.set()

    async def flusher(self) -> None:
        """Send what accumulated, at most one call per `FLUSH_INTERVAL_S`, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.flush()
            await trio.sleep(FLUSH_INTERVAL_S)

    async def flush(self) -> None:
        """Send this process's figures now (a failure drops them, logged). Cancellation:
        the figures being sent may be lost."""
        pending, self._pending = self._pending, {}
        if not pending:
            return
        args: list[bytes | str | int | float] = [self.prefix, BUCKET_TTL_S]
        for workspace_id, s in pending.items():
            args += [workspace_id, s.requests, s.tokens, repr(s.cost_usd), s.ok, repr(s.latency_ms)]
        try:
            with trio.fail_after(self.timeout_s):
                await self.client.run_script(FLUSH, [], args)
        except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
            self.dropped += sum(s.requests for s in pending.values())
            logger.warning("could not share realtime counters: %s", exc)

    async def beat(self, gauges: Callable[[], Gauges]) -> None:
        """Publish this process's gauges every `HEARTBEAT_S` until cancelled."""
        while True:
            active, queued = gauges()
            args: list[bytes | str | int | float] = [
                self.prefix,
                self.worker_id,
                active,
                queued,
                int(GAUGE_TTL_S * 1000),
            ]
            try:
                with trio.fail_after(self.timeout_s):
                    await self.client.run_script(BEAT, [self._workers], args)
            except (RedisUnavailable, RedisReplyError, trio.TooSlowError) as exc:
                logger.warning("could not share realtime gauges: %s", exc)
            await trio.sleep(HEARTBEAT_S)

    async def read(self, workspace_id: str, own: Gauges) -> LiveFigures | None:
        """Every process's figures (this one's gauges are `own`, taken now), or None when
        the server fails or the whole (this process's flush, then the read) takes longer
        than `timeout_s`."""
        reply: object = None
        try:
            with trio.move_on_after(self.timeout_s):
                await self.flush()
                reply = await self.client.run_script(
                    READ, [self._workers], [self.prefix, workspace_id]
                )
        except (RedisUnavailable, RedisReplyError) as exc:
            logger.warning("shared realtime counters unavailable: %s", exc)
            return None
        if not isinstance(reply, list) or len(reply) != 6:
            return None
        return self._figures(reply, own)

    def _figures(self, reply: list[object], own: Gauges) -> LiveFigures:
        requests, tokens, cost, ok, latency, gauges = reply
        active, queued = own
        pairs = gauges if isinstance(gauges, list) else []
        for index in range(0, len(pairs) - 1, 2):
            worker, value = pairs[index], pairs[index + 1]
            if worker == self.worker_id.encode() or not isinstance(value, bytes):
                continue  # this process: its live value, not its last heartbeat
            other_active, _, other_queued = value.decode().partition(" ")
            active += int(other_active or 0)
            queued += int(other_queued or 0)
        ok_count = _int(ok)
        return LiveFigures(
            requests=_int(requests),
            tokens=_int(tokens),
            cost_usd=_float(cost),
            avg_latency_ms=_float(latency) / ok_count if ok_count else None,
            active_requests=active,
            queue_depth=queued,
        )


def _int(value: object) -> int:
    return value if isinstance(value, int) else int(_float(value))


def _float(value: object) -> float:
    if isinstance(value, bytes | str):
        return float(value)
    return float(value) if isinstance(value, int) else 0.0


async def live_worker(
    live: SharedRealtime,
    gauges: Callable[[], Gauges],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Several workers: send this one's counts and gauges to the shared server until
    cancelled (its failures are the counters' own to absorb)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(live.flusher)
        nursery.start_soon(live.beat, gauges)
        task_status.started()
