"""The enabled routing rules of every workspace, compiled and held in memory.

Filled from the store at start and kept in step by the management API (create, patch,
enable, disable, delete), so that routing a chat request never queries SQLite. Each
workspace's rules are an immutable tuple in evaluation order, replaced whole on change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from gateway.upstream.routing.rules import Rule, compile_rule
from store.rules import RoutingRuleRecord


def _ordered(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(sorted(rules, key=lambda r: (r.priority, r.id)))


@attrs.define
class RuleBook:
    _by_workspace: dict[str, tuple[Rule, ...]] = attrs.field(factory=dict)
    # Told the workspace after a change made here (`put`, `remove`), so that the other
    # processes read the rules again (`gateway.workers.store_events`, `load`).
    on_change: Callable[[str], None] | None = None

    def load(self, records: Iterable[RoutingRuleRecord]) -> None:
        """Replace everything with `records` (disabled ones are left out)."""
        grouped: dict[str, list[Rule]] = {}
        for record in records:
            if record.enabled:
                grouped.setdefault(record.workspace_id, []).append(compile_rule(record))
        self._by_workspace = {ws: _ordered(rules) for ws, rules in grouped.items()}

    def put(self, record: RoutingRuleRecord) -> None:
        """Record a created or changed rule; a disabled rule leaves the book."""
        kept = [r for r in self.enabled(record.workspace_id) if r.id != record.id]
        if record.enabled:
            kept.append(compile_rule(record))
        self._store(record.workspace_id, kept)
        self._changed(record.workspace_id)

    def remove(self, workspace_id: str, rule_id: str) -> None:
        self._store(workspace_id, [r for r in self.enabled(workspace_id) if r.id != rule_id])
        self._changed(workspace_id)

    def _changed(self, workspace_id: str) -> None:
        if self.on_change is not None:
            self.on_change(workspace_id)

    def enabled(self, workspace_id: str) -> tuple[Rule, ...]:
        """The workspace's enabled rules, by ascending priority."""
        return self._by_workspace.get(workspace_id, ())

    def _store(self, workspace_id: str, rules: list[Rule]) -> None:
        if rules:
            self._by_workspace[workspace_id] = _ordered(rules)
        else:
            self._by_workspace.pop(workspace_id, None)
