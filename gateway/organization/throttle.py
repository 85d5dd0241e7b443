"""Login throttling: exponential backoff per (email, client address), in memory.

After `free_failures` failed logins the next attempt must wait 1 s, then 2, 4, ... up to
`max_delay_s`; a success clears the count. One process holds the counts (a restart forgets
them, which only gives an attacker a few more guesses per restart). The table is bounded:
the oldest entries go first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

import attrs


@attrs.define
class _Failures:
    count: int = 0
    blocked_until: float = 0.0


@attrs.define
class LoginThrottle:
    free_failures: int = 3
    max_delay_s: float = 300.0
    max_entries: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _entries: OrderedDict[tuple[str, str], _Failures] = attrs.field(factory=OrderedDict)

    def wait_s(self, email: str, address: str) -> float:
        """Seconds before this pair may try again (0 when it may now)."""
        entry = self._entries.get((email, address))
        if entry is None:
            return 0.0
        return max(0.0, entry.blocked_until - self.clock())

    def failed(self, email: str, address: str) -> None:
        key = (email, address)
        entry = self._entries.pop(key, None) or _Failures()
        entry.count += 1
        over = entry.count - self.free_failures
        if over >= 0:
            entry.blocked_until = self.clock() + min(2.0**over, self.max_delay_s)
        self._entries[key] = entry
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def succeeded(self, email: str, address: str) -> None:
        self._entries.pop((email, address), None)
