"""Reading the request log: a workspace's entries, newest first, and one request's.

Every read is the caller's workspace only (`X-Workspace-ID`, as on every management
route): another workspace's request id answers 404 like an unknown one. Entries are
written by the usage writer within its batch delay; reading one request that is not there
yet waits for the writer once before answering 404, so a request that has just failed can
be looked up at once. A workspace that keeps bodies shows them (opened, PII redacted) in
the read of one request, to the roles that may read the audit log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.platform.auth import Principal
from gateway.platform.errors import not_found
from gateway.platform.roles import Action, allowed
from gateway.requestlog import render
from gateway.requestlog.bodies import opened
from gateway.requestlog.input import encode_cursor, parse_log_query
from gateway.requestlog.services import RequestLogServices
from store import request_log
from store.request_log import LogEntry

# Bodies hold prompts and answers (PII redacted): the roles that may read the audit log
# (owner, admin) read them; every role sees the rest of an entry.
BODY_READERS: Action = "view_audit_log"


async def list_entries(
    services: RequestLogServices, principal: Principal, args: Mapping[str, str]
) -> render.LogPage:
    wanted = parse_log_query(principal.workspace_id, args)
    asked = attrs.evolve(wanted, limit=wanted.limit + 1)
    found = await services.db.run(lambda d: request_log.query(d, asked))
    shown = found[: wanted.limit]
    more = len(found) > wanted.limit
    return render.page(shown, encode_cursor(shown[-1].row_id) if more and shown else None)


async def read_request(
    services: RequestLogServices, principal: Principal, request_id: str
) -> render.LoggedRequest:
    workspace = principal.workspace_id

    def read() -> Any:
        return services.db.run(lambda d: request_log.entries_of(d, workspace, request_id))

    entries = await read()
    if not entries:
        await services.flush()  # written within the writer's batch delay: wait once
        entries = await read()
    if not entries:
        raise not_found(
            "request_not_found", f"No request '{request_id}' in this workspace's request log."
        )
    may_read = allowed(principal.role, BODY_READERS)
    shown = [render.entry(found, body=_body(services, found, may_read)) for found in entries]
    return render.request(request_id, shown)


def _body(
    services: RequestLogServices, found: LogEntry, may_read: bool
) -> render.LoggedBody | None:
    """The entry's bodies, opened, for a caller whose role may read them; else None."""
    if found.body is None or not may_read:
        return None
    kept: render.LoggedBody = opened(services.cipher, found.body)
    return kept
