"""A family's data kept per workspace (stored files, data documents), which a deleted
workspace takes with it: the organisation family erases every kind the root plugs in,
without knowing the families that keep them (`gateway.organization.workspaces`)."""

from __future__ import annotations

from typing import Protocol

import sqlite_utils
import trio

from store.erasure import Blob


class WorkspaceData(Protocol):
    @property
    def blob_lock(self) -> trio.Lock:
        """Held while blobs are removed, as the family's own deletions hold it."""
        ...

    def drop_pending(self, workspace_id: str) -> None:
        """Drop what is waiting to be written for the workspace (it never will be): done
        before its rows are deleted, so nothing lands after them."""
        ...

    def remove_workspace(self, db: sqlite_utils.Database, workspace_id: str) -> list[Blob]:
        """Delete the workspace's rows (inside the caller's transaction); the blobs left
        to remove once it commits."""
        ...

    def forget(self, workspace_id: str) -> None:
        """Drop what is kept in memory for the workspace (its vectors)."""
        ...
