"""The console's usage series and exports listing on both backends: sums per bucket within
[since, until), requests that reached no provider summed per error code, the latest
exports of one workspace first."""

from __future__ import annotations

from datetime import timedelta

from store import exports, usage
from store.exports import ExportRecord
from store.handle import Handle
from store.usage_series import usage_series

from .conftest import T0
from .test_usage import make_usage

HOUR = timedelta(hours=1)


def test_buckets_sum_within_the_range_and_name_the_reason_of_unreached_requests(
    sdb: Handle,
) -> None:
    since = T0.replace(minute=0, second=0, microsecond=0)
    usage.insert_records(
        sdb,
        [
            make_usage(1, created_at=since - timedelta(seconds=1)),  # before the range
            make_usage(2),
            make_usage(3, status=502, error_code="provider_error", cost_usd=0.0),
            make_usage(4, provider="", model="nope", status=404, error_code="model_not_found"),
            make_usage(5, provider="", model="nope", status=404, error_code="model_not_found"),
            make_usage(6, provider="", model="gpt-4o", status=429, error_code=None),
            make_usage(7, created_at=since + HOUR),  # the second bucket
            make_usage(8, created_at=since + 2 * HOUR),  # at `until`: outside
        ],
    )
    points = usage_series(
        sdb, workspace_id="default", since=since, until=since + 2 * HOUR, bucket_s=3600
    )
    found = [(p.start - since, p.provider, p.model, p.reason, p.requests, p.errors) for p in points]
    assert found == [
        (timedelta(0), "", "gpt-4o", "unknown", 1, 1),
        (timedelta(0), "", "nope", "model_not_found", 2, 2),
        (timedelta(0), "openai", "gpt-4o", None, 2, 1),
        (HOUR, "openai", "gpt-4o", None, 1, 0),
    ]
    assert points[2].cost_usd == 0.5 and points[2].prompt_tokens == 20


def test_the_latest_exports_of_a_workspace_come_first(sdb: Handle) -> None:
    def export(n: int, workspace: str) -> ExportRecord:
        return ExportRecord(
            id=f"exp_{n}",
            workspace_id=workspace,
            status="processing",
            format="csv",
            include=("usage",),
            start_date="2025-02-01",
            end_date="2025-02-28",
            created_at=T0 + timedelta(minutes=n),
        )

    for n, workspace in ((1, "default"), (2, "other"), (3, "default"), (4, "default")):
        exports.insert(sdb, export(n, workspace))
    assert [e.id for e in exports.recent(sdb, "default", 2)] == ["exp_4", "exp_3"]
    assert [e.id for e in exports.recent(sdb, "other", 20)] == ["exp_2"]
