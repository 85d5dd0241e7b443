"""A chat request's plan made once per shape of request, not once per request.

After routing, planning narrows the routed chain to the targets that can take the
request: those with the capabilities its content needs (images, documents, audio, JSON
mode), those that honour every vendor parameter it asks, those the key may use, and
those whose window holds its prompt and answer. Apart from the sizes, none of that
depends on the request's content but on its shape: the routed resolution (made once per
provider set, `gateway.chat.resolutions`), the capabilities needed, the parameters asked
and their values, and the key's `allowed_models`. So the narrowed resolution is kept by
shape; the sizes are checked per request against the smallest bounds of the routed
chain, and a request that would not fit every candidate of it is planned in full (its
narrowing depends on its size), as is every refusal (raised each time, never kept).

Invalidation is by value, not by timer: a change of the workspace's providers makes a
new routed resolution (a new object: the entry's `base` no longer matches), a change of
the key's `allowed_models` or of the request's shape makes another key. The catalog is
fixed for the process.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import attrs

from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Resolution, Target

MAX_ENTRIES = 4096
UNBOUNDED = 1 << 62


@attrs.frozen
class Bounds:
    """The smallest context window and answer bound among a chain's targets (0 or a
    target the catalog does not describe: no bound)."""

    context: int
    output: int

    def hold(self, prompt: int, max_tokens: int | None) -> bool:
        """Whether every target of the chain takes this prompt and `max_tokens` (so that
        the sizes narrow nothing: the plan is the shape's)."""
        if max_tokens is not None and max_tokens > self.output:
            return False
        return prompt + (max_tokens or 0) <= self.context


def bounds_of(resolution: Resolution) -> Bounds:
    chain: Sequence[Target] = (resolution.target, *resolution.alternatives)
    windows = [t.info.context_window for t in chain if t.info and t.info.context_window > 0]
    answers = [t.info.max_output_tokens for t in chain if t.info and t.info.max_output_tokens > 0]
    return Bounds(min(windows, default=UNBOUNDED), min(answers, default=UNBOUNDED))


@attrs.define(eq=False)
class Entry:
    base: Resolution  # the routed resolution this plan narrowed (compared by identity)
    bounds: Bounds  # the base chain's: a request within them is narrowed by shape alone
    planned: Resolution
    chain: Plan | None = None  # the race over `planned` without a request's own options


class PlanCache:
    """A bounded memo of narrowed resolutions by (routed resolution, request shape)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: dict[Hashable, Entry] = {}
        self._planned: dict[int, Entry] = {}  # by the kept plan's identity, for `chain`
        self._max = max_entries

    def planned(
        self,
        base: Resolution,
        shape: Hashable,
        prompt: int,
        max_tokens: int | None,
        narrow: Callable[[Resolution], Resolution],
    ) -> Resolution:
        """`narrow(base)`, kept for `shape` when the sizes narrowed nothing. `shape` must
        hold everything `narrow` reads apart from the sizes; a refusal is raised, not kept."""
        key = (id(base), shape)
        entry = self._entries.get(key)
        if entry is not None and entry.base is base and entry.bounds.hold(prompt, max_tokens):
            return entry.planned
        planned = narrow(base)
        bounds = entry.bounds if entry is not None and entry.base is base else bounds_of(base)
        if bounds.hold(prompt, max_tokens):
            if len(self._entries) >= self._max:  # many shapes or provider sets: start over
                self._entries.clear()
                self._planned.clear()
            entry = self._entries[key] = Entry(base, bounds, planned)
            self._planned[id(planned)] = entry
        return planned

    def chain(self, planned: Resolution, make: Callable[[], Plan]) -> Plan:
        """The race plan of a kept `planned` resolution made once (`make()` for a
        resolution this cache did not make: it is the request's own). Only for a request
        whose plan depends on nothing but its resolution (no options, rule or provider
        of its own): the caller decides."""
        entry = self._planned.get(id(planned))
        if entry is None or entry.planned is not planned:
            return make()
        if entry.chain is None:
            entry.chain = make()
        return entry.chain

    def __len__(self) -> int:
        return len(self._entries)


def hashable_shape(*parts: Any) -> Hashable | None:
    """`parts` as a key, or None when one of them cannot be a key (a parameter whose
    value is an object or a list: such requests are planned in full)."""
    try:
        hash(parts)
    except TypeError:
        return None
    return parts
