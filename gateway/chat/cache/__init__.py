"""Exact-match response cache for chat completions.

`key` says when two requests are the same question, `policy` whether a request may use
the cache and for how long, `store` keeps the answers (bounded LRU with TTLs) and the
hit counters (`stats`), `replay` turns streams into answers and answers back into streams.
"""

from gateway.chat.cache.key import cache_key, canonical_request
from gateway.chat.cache.policy import BYPASS, DEFAULT_TTL_S, CacheDecision, decide_cache
from gateway.chat.cache.replay import StreamAssembler, replay_chunks, replayed
from gateway.chat.cache.stats import CacheReport, CacheStats, CacheTotals, ModelCacheTotals
from gateway.chat.cache.store import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    ResponseCache,
    is_cacheable,
)

__all__ = [
    "BYPASS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_TTL_S",
    "CacheDecision",
    "CacheReport",
    "CacheStats",
    "CacheTotals",
    "ModelCacheTotals",
    "ResponseCache",
    "StreamAssembler",
    "cache_key",
    "canonical_request",
    "decide_cache",
    "is_cacheable",
    "replay_chunks",
    "replayed",
]
