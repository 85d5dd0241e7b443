"""The routing of a named model, made once per set of providers instead of per request.

Resolving a model the client named, when no routing rule matched and no latency signal
is involved (anything but `auto`), depends only on the catalog (fixed for the process),
the workspace's active and disabled providers (the registry's sets, new objects after
every change) and the routing mode: the same inputs give the same `Resolution`, which
is immutable. It took ~0.1 ms of each request. What depends on the request itself (its
size, its parameters, the key's allowed models) is still checked per request, after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from gateway.upstream.resolve import Resolution

MAX_ENTRIES = 1024
Key: TypeAlias = tuple[frozenset[str], frozenset[str], str, str]


class Resolutions:
    """A bounded memo of resolutions by (active, disabled, model, mode). A refusal (an
    unknown model: 404) is raised each time, never kept."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._found: dict[Key, Resolution] = {}
        self._max = max_entries

    def resolved(
        self,
        active: frozenset[str],
        disabled: frozenset[str],
        model: str,
        mode: str,
        resolve: Callable[[], Resolution],
    ) -> Resolution:
        key = (active, disabled, model, mode)
        found = self._found.get(key)
        if found is None:
            found = resolve()
            if len(self._found) >= self._max:  # many models or provider sets: start over
                self._found.clear()
            self._found[key] = found
        return found
