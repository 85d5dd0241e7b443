"""What several workers and nodes share: the Redis-protocol server and the limits on it.

Without `redis_url` the gateway is one process with everything in memory, and running
more than one worker is refused (`check_workers`): each would count limits alone and a
key would get N times its limit. With it, per-key limits and key revocations live on the
server, and so are the response cache, the circuit breakers' transitions and the realtime
analytics counters (docs/scale-out.md).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import attrs
import trio

from gateway.analytics.live import SharedRealtime
from gateway.chat.cache.shared import SharedResponseCache
from gateway.platform.config import Settings
from gateway.platform.extras import POSTGRES, install_command
from gateway.platform.resp import RedisClient, RedisUnavailable
from gateway.upstream.limits import store_count_loader
from gateway.upstream.limits.shared import SharedLimiter
from gateway.upstream.shared_breakers import SharedBreakers
from gateway.workers.usage_writer import UsageWriter
from store.db import Database
from store.secrets import SECRET_KEY_ENV

logger = logging.getLogger(__name__)

WORKERS_NEED_REDIS = (
    "--workers {n} needs GATEWAY_REDIS_URL (a Redis or Valkey server): without it each "
    "worker would keep its own limits and a key could use {n} times its limit. Set "
    "GATEWAY_REDIS_URL=redis://host:6379/0, or run one worker."
)


SHARED_STORE_NEEDS_KEY = (
    "GATEWAY_DATABASE_URL needs GATEWAY_SECRET_KEY: provider credentials in the shared "
    "store are encrypted with the deployment's master key, which every node must hold; a "
    "key file in one node's data directory would leave them unreadable on the others. "
    "Set the same GATEWAY_SECRET_KEY (a Fernet key) on every node."
)


def check_workers(settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """Why these settings (and environment) cannot start, or None."""
    if settings.workers < 1:
        return "--workers must be at least 1"
    if settings.workers > 1 and not settings.redis_url:
        return WORKERS_NEED_REDIS.format(n=settings.workers)
    if settings.database_url and not POSTGRES.installed():
        return f"GATEWAY_DATABASE_URL needs the [postgres] extra: {install_command((POSTGRES,))}"
    if settings.database_url and not (env or {}).get(SECRET_KEY_ENV):
        return SHARED_STORE_NEEDS_KEY
    return None


@attrs.frozen
class Shared:
    """What lives on the server when `redis_url` is set (all None without it)."""

    client: RedisClient | None = None
    limits: SharedLimiter | None = None
    cache: SharedResponseCache | None = None
    breakers: SharedBreakers | None = None
    live: SharedRealtime | None = None


@asynccontextmanager
async def open_shared(
    settings: Settings, db: Database, usage: UsageWriter
) -> AsyncIterator[Shared]:
    """The client and the shared state when `redis_url` is set, else `Shared()`.

    The server is pinged once at start: an address that cannot work is an error now,
    while a server that is down at start is only logged and handled like one that goes
    away later (each state's failure policy answers until it is back)."""
    if not settings.redis_url:
        yield Shared()
        return
    client = RedisClient.from_url(settings.redis_url, settings.redis_max_connections)
    try:
        await _ping(client, settings.redis_timeout_s)
        prefix, timeout_s = settings.redis_prefix, settings.redis_timeout_s
        limiter = SharedLimiter(
            client,
            count_loader=store_count_loader(db, usage.flush),
            prefix=prefix,
            timeout_s=timeout_s,
            lease_s=settings.redis_lease_s,
            fail_open=settings.redis_fail_open,
        )
        yield Shared(
            client,
            limiter,
            SharedResponseCache(client, prefix, timeout_s, max_bytes=settings.cache_max_bytes),
            SharedBreakers(client, prefix, timeout_s),
            SharedRealtime(client, prefix, timeout_s),
        )
    finally:
        client.close()


async def _ping(client: RedisClient, timeout_s: float) -> None:
    try:
        with trio.fail_after(max(timeout_s, 2.0)):
            await client.execute("PING")
    except (RedisUnavailable, trio.TooSlowError) as exc:
        logger.warning("redis not reachable at start: %s", exc)
