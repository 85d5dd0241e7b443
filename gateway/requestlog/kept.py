"""The request log as a kind of workspace data (`gateway.kernels.workspace_data`): a
deleted workspace takes its entries (and the bodies they hold) with it."""

from __future__ import annotations

import attrs
import sqlite_utils
import trio

from store import request_log
from store.erasure import Blob


@attrs.frozen
class LoggedRequests:
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)  # no blobs: nothing waits on it

    def drop_pending(self, workspace_id: str) -> None:
        """Nothing to drop here: entries waiting in the usage writer's queue are its
        usage records too, and are written (the window erases them)."""
        return None

    def remove_workspace(self, db: sqlite_utils.Database, workspace_id: str) -> list[Blob]:
        request_log.remove_workspace(db, workspace_id)
        return []

    def forget(self, workspace_id: str) -> None:
        return None
