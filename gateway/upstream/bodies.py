"""Request and answer bodies for the request log, for the workspaces that keep them.

Bodies are not kept by default. A workspace that turns them on (`request_log_bodies`,
through the workspace's PATCH) has its chat requests and answers captured here, on the
request path only as references (`BodyCapture`: the request already parsed, the answer
read when the usage record is built); the usage writer's sealing step redacts them with
the PII detector and encrypts them (`gateway.requestlog.bodies`) before anything reaches
the disk. `BodyKeepers` is the set of workspaces that keep them, read on the hot path
without a store query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs
import orjson


@attrs.define
class BodyCapture:
    """One call's bodies: the request as the client sent it, and a reader of the answer
    (set by the family once it has one; None: the call ended without an answer)."""

    request: Any
    answer: Callable[[], Any] | None = None

    def text(self) -> str:
        """Both as one JSON document, clear text (sealed by the usage writer)."""
        answer = self.answer() if self.answer is not None else None
        return orjson.dumps({"request": self.request, "response": answer}).decode()


@attrs.define
class BodyKeepers:
    """The workspaces whose request log keeps bodies: loaded when the gateway starts,
    changed by the workspace's PATCH here (announced through `on_change`, so that the
    other workers and nodes load it again: `gateway.workers.store_events`)."""

    workspaces: set[str] = attrs.field(factory=set, converter=set)
    on_change: Callable[[str], None] | None = None

    def keeps(self, workspace_id: str) -> bool:
        return workspace_id in self.workspaces

    def set(self, workspace_id: str, keep: bool) -> None:
        if keep:
            self.workspaces.add(workspace_id)
        else:
            self.workspaces.discard(workspace_id)
        if self.on_change is not None:
            self.on_change(workspace_id)

    def load(self, workspaces: Iterable[str]) -> None:
        """The set as the store has it (start-up, or another process's change): no
        announcement."""
        self.workspaces = set(workspaces)
