"""The response cache's memory: a bounded LRU of finished chat answers with per-entry TTLs.

Bounded twice, by entry count and by an approximate byte size of the answers, so neither
many small answers nor a few huge ones can grow it without limit. When full, the least
recently *used* entry goes first. Expiry is lazy on read; on insert, expired entries are
dropped first, so dead entries never push live ones out.

Every operation is O(1) (amortised): besides the LRU order, entries are kept in one FIFO
per distinct TTL. TTLs come from the settings and the routing rules, so there are few
of them, and since the clock only moves forward, within one TTL the oldest insert is
always the first to expire: sweeping stops at the first entry still alive.

No background task: a cache nobody writes to holds at most its bounds.
The clock is injectable (trio's by default), so tests drive expiry with a virtual clock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import attrs
import trio

from gateway.chat.cache.stats import CacheStats
from providers.types import ChatResult

DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
ENTRY_OVERHEAD_BYTES = 512
"""A rough allowance for the key, the entry and the containers' slots."""

CACHEABLE_FINISH_REASONS = frozenset({"stop", "length", "tool_calls"})


LOGPROB_BYTES = 64
"""A rough allowance for one token's log-probability entry (and each alternative)."""


def is_cacheable(result: ChatResult) -> bool:
    """Only a complete answer with something in every choice: never a filtered or empty
    one, and never a spoken one (its audio `id` names a clip the vendor keeps only until
    `expires_at`, for the next turn: a replay would hand out an id the vendor forgot)."""
    return all(
        choice.finish_reason in CACHEABLE_FINISH_REASONS
        and (bool(choice.content) or bool(choice.tool_calls))
        and choice.audio is None
        for choice in result.choices
    )


def result_size(result: ChatResult) -> int:
    """Approximate bytes held by one cached answer (its text, UTF-8, and its
    log-probabilities), overhead included."""
    size = ENTRY_OVERHEAD_BYTES + len(result.id) + len(result.model)
    for choice in result.choices:
        if choice.content:
            size += len(choice.content.encode("utf-8", "surrogatepass"))
        for call in choice.tool_calls:
            arguments = call.arguments.encode("utf-8", "surrogatepass")
            size += len(call.id) + len(call.name) + len(arguments)
        for entry in choice.logprobs or ():
            size += LOGPROB_BYTES * (1 + len(entry.get("top_logprobs") or ()))
    return size


@attrs.frozen(slots=True)
class _Entry:
    result: ChatResult
    ttl_s: float
    expires_at: float
    size: int


class ResponseCache:
    """Finished chat answers by cache key (see `gateway.chat.cache.key`), plus the hit counters.

    Not thread-safe; used from the trio thread only. Stored results are frozen and are
    shared, never copied.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("the cache needs room for at least one entry")
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._clock = clock
        self._lru: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._expiry: dict[float, OrderedDict[str, None]] = {}  # per TTL, first to expire first
        self._bytes = 0
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._lru)

    def __contains__(self, key: object) -> bool:
        return key in self._lru

    @property
    def bytes_used(self) -> int:
        return self._bytes

    def get(self, key: str) -> ChatResult | None:
        """The live answer under `key` (now the most recently used), or None. Counts nothing."""
        entry = self._lru.get(key)
        if entry is None:
            return None
        if self._clock() >= entry.expires_at:
            self._remove(key)
            return None
        self._lru.move_to_end(key)
        return entry.result

    def put(self, key: str, result: ChatResult, *, ttl_s: float) -> bool:
        """Keep `result` for `ttl_s` seconds; False when it is not kept.

        Not kept: a TTL of zero or less, an answer that is not cacheable (see
        `is_cacheable`), or one bigger than the whole byte budget. A previous entry
        under the same key is replaced either way.
        """
        self.discard(key)
        size = result_size(result)
        if ttl_s <= 0 or size > self._max_bytes or not is_cacheable(result):
            return False
        now = self._clock()
        self._drop_expired(now)
        while len(self._lru) >= self._max_entries or self._bytes + size > self._max_bytes:
            self._remove(next(iter(self._lru)))
        self._lru[key] = _Entry(result, ttl_s, now + ttl_s, size)
        self._expiry.setdefault(ttl_s, OrderedDict())[key] = None
        self._bytes += size
        return True

    def discard(self, key: str) -> None:
        if key in self._lru:
            self._remove(key)

    def clear(self) -> None:
        self._lru.clear()
        self._expiry.clear()
        self._bytes = 0

    def _drop_expired(self, now: float) -> None:
        for ttl_s, queue in list(self._expiry.items()):
            while queue:
                key = next(iter(queue))
                if now < self._lru[key].expires_at:
                    break
                self._remove(key)
            if not queue:
                self._expiry.pop(ttl_s, None)

    def _remove(self, key: str) -> None:
        entry = self._lru.pop(key)
        self._bytes -= entry.size
        queue = self._expiry[entry.ttl_s]
        del queue[key]
        if not queue:
            del self._expiry[entry.ttl_s]
