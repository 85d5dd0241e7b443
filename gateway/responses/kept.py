"""Stored responses as a kind of workspace data (`gateway.kernels.workspace_data`): a
deleted workspace takes its stored responses, those written and those still waiting to
be written behind their answers, and its background responses still running."""

from __future__ import annotations

import attrs
import sqlite_utils
import trio

from gateway.responses.background_runs import BackgroundResponses
from store import responses as response_store
from store.erasure import Blob
from store.responses import ResponseKeeper


@attrs.frozen
class StoredResponses:
    keeper: ResponseKeeper
    background: BackgroundResponses
    blob_lock: trio.Lock = attrs.field(factory=trio.Lock)  # no blobs: nothing waits on it

    def drop_pending(self, workspace_id: str) -> None:
        self.background.forget_workspace(workspace_id)  # running: cancelled, never stored
        self.keeper.forget_workspace(workspace_id)  # kept, not yet written: never will be

    def remove_workspace(self, db: sqlite_utils.Database, workspace_id: str) -> list[Blob]:
        response_store.remove_workspace(db, workspace_id)
        return []

    def forget(self, workspace_id: str) -> None:
        return None
