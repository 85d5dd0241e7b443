"""The request log's store functions, on SQLite and PostgreSQL: written with the usage
batch, read newest first with every filter and the cursor, per workspace, purged past a
moment, erased with a workspace, bodies dropped or kept."""

from __future__ import annotations

from datetime import timedelta

from store import request_log, usage, workspaces
from store.handle import Handle
from store.request_log import LoggedAttempt, LogQuery
from store.workspaces import WorkspaceRecord

from .conftest import T0
from .test_usage import make_usage

ATTEMPTS = (
    LoggedAttempt("openai", "gpt-4o", 1, 0.5, 120.25, "failed", "provider_timeout"),
    LoggedAttempt("anthropic", "claude-sonnet-4-5", 1, 121.0, 80.0, "won"),
)


def logged(n: int, **overrides: object) -> usage.UsageRecord:
    fields: dict[str, object] = {
        "request_log": True,
        "created_at": T0 + timedelta(minutes=n),
        "latency_ms": 10.0 * n,
    }
    return make_usage(n, **(fields | overrides))


def ids(found: list[request_log.LogEntry]) -> list[str]:
    return [entry.request_id for entry in found]


def test_entries_are_written_with_the_usage_batch_and_read_back(sdb: Handle) -> None:
    record = logged(
        1,
        model_requested="auto",
        ttft_ms=121.5,
        attempts=ATTEMPTS,
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        body="gAAAA-sealed",
        body_sealed=True,
        cache_hit=True,
    )
    unlogged = make_usage(2)
    clear = logged(3, body="clear text", body_sealed=False)
    assert usage.insert_records(sdb, [record, unlogged, clear]) == 3
    [entry] = request_log.entries_of(sdb, "default", "req_1")
    assert (entry.model_requested, entry.model, entry.provider) == ("auto", "gpt-4o", "openai")
    assert entry.attempts == ATTEMPTS
    assert (entry.ttft_ms, entry.latency_ms, entry.cache_hit) == (121.5, 10.0, True)
    assert entry.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert entry.created_at == record.created_at
    assert entry.body == "gAAAA-sealed"
    assert request_log.entries_of(sdb, "default", "req_2") == []  # not asked for
    [unsealed] = request_log.entries_of(sdb, "default", "req_3")
    assert unsealed.body is None  # a clear body never reaches the table
    assert request_log.entries_of(sdb, "other", "req_1") == []


def test_filters_the_cursor_and_workspaces(sdb: Handle) -> None:
    records = [
        logged(0),
        logged(1, key_id="key_b", status=502, error_code="provider_error", provider="anthropic"),
        logged(2, model="claude-sonnet-4-5", model_requested="auto"),
        logged(3, status=429, error_code="rate_limit_exceeded", endpoint="embeddings"),
        logged(4, workspace_id="ws_other"),
    ]
    usage.insert_records(sdb, records)

    def find(**filters: object) -> list[str]:
        return ids(request_log.query(sdb, LogQuery(workspace_id="default", **filters)))

    assert find() == ["req_3", "req_2", "req_1", "req_0"]
    assert find(key_id="key_b") == ["req_1"]
    assert find(status_class=5) == ["req_1"]
    assert find(errors_only=True) == ["req_3", "req_1"]
    assert find(status=429) == ["req_3"]
    assert find(error_code="provider_error") == ["req_1"]
    assert find(provider="anthropic") == ["req_1"]
    assert find(model="auto") == ["req_2"]  # the model asked for
    assert find(model="claude-sonnet-4-5") == ["req_2"]  # or the one that served
    assert find(endpoint="embeddings") == ["req_3"]
    assert find(min_latency_ms=20.0) == ["req_3", "req_2"]
    assert find(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3)) == [
        "req_2",
        "req_1",
    ]
    first = request_log.query(sdb, LogQuery(workspace_id="default", limit=2))
    rest = request_log.query(
        sdb, LogQuery(workspace_id="default", limit=2, before_row=first[-1].row_id)
    )
    assert ids(first) + ids(rest) == ["req_3", "req_2", "req_1", "req_0"]
    assert ids(request_log.query(sdb, LogQuery(workspace_id="ws_other"))) == ["req_4"]


def test_purge_removal_and_bodies(sdb: Handle) -> None:
    usage.insert_records(
        sdb,
        [
            logged(0, body="sealed-0", body_sealed=True),
            logged(10, body="sealed-10", body_sealed=True),
            logged(20, workspace_id="ws_other"),
        ],
    )
    assert request_log.oldest_before(sdb, T0 + timedelta(minutes=5))
    assert request_log.purge_before(sdb, T0 + timedelta(minutes=5)) == (1, 1)
    assert not request_log.oldest_before(sdb, T0 + timedelta(minutes=5))
    assert request_log.drop_bodies(sdb, "default") == 1
    [kept] = request_log.entries_of(sdb, "default", "req_10")
    assert kept.body is None
    assert request_log.remove_workspace(sdb, "ws_other") == 1
    assert request_log.query(sdb, LogQuery(workspace_id="ws_other")) == []


def test_the_workspace_switch(sdb: Handle) -> None:
    assert request_log.keeps_bodies(sdb) == set()
    workspaces.insert(sdb, WorkspaceRecord(id="ws_b", name="B", created_at=T0))
    assert request_log.set_keeps_bodies(sdb, "ws_b", True)
    assert request_log.keeps_bodies(sdb) == {"ws_b"}
    found = workspaces.get(sdb, "ws_b")
    assert found is not None and found.request_log_bodies is True
    assert not request_log.set_keeps_bodies(sdb, "ws_nobody", True)
    assert request_log.set_keeps_bodies(sdb, "ws_b", False)
    assert request_log.keeps_bodies(sdb) == set()
