"""The API the console reads beyond the management routes it shares with every client:
the usage series over a chosen range with every bucket listed, requests that reached no
provider summed under their reason, the caller's own role (`GET /v1/management/me`) and
the workspace's exports (`GET /v1/management/analytics/export`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import pairwise

import httpx
import openai
import pytest
import trio

from gateway.operator.usage_view import parse_query
from gateway.platform.errors import ApiError
from tests.gateway.org_world import bearer, join, ok

M = "/v1/management"


async def test_the_last_hours_are_whole_buckets_ending_with_the_current_one(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "one bar of many"}]
    )
    series = await ok(await http.get(f"{M}/console/usage?hours=24&bucket=hour"))
    buckets = [datetime.fromisoformat(b) for b in series["buckets"]]
    assert len(buckets) == 24
    assert all(b - a == timedelta(hours=1) for a, b in pairwise(buckets))
    now = datetime.now(UTC)
    assert buckets[-1] <= now < buckets[-1] + timedelta(hours=1)
    assert series["since"] == series["buckets"][0]
    assert datetime.fromisoformat(series["until"]) == buckets[-1] + timedelta(hours=1)
    assert [p["start"] for p in series["points"]] == [series["buckets"][-1]]
    minutes = await ok(await http.get(f"{M}/console/usage?hours=1&bucket=minute"))
    assert len(minutes["buckets"]) == 60
    days = await ok(await http.get(f"{M}/console/usage?hours=720&bucket=day"))
    assert len(days["buckets"]) == 30


async def test_a_date_range_covers_whole_utc_days(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "today's request"}]
    )
    today = datetime.now(UTC).date()
    week_ago = today - timedelta(days=6)
    days = await ok(
        await http.get(
            f"{M}/console/usage",
            params={"start_date": str(week_ago), "end_date": str(today), "bucket": "day"},
        )
    )
    assert days["hours"] is None
    assert [b[:10] for b in days["buckets"]] == [
        str(week_ago + timedelta(days=n)) for n in range(7)
    ]
    assert {p["start"][:10] for p in days["points"]} == {str(today)}
    yesterday = await ok(
        await http.get(
            f"{M}/console/usage",
            params={
                "start_date": str(today - timedelta(days=1)),
                "end_date": str(today - timedelta(days=1)),
            },
        )
    )
    assert len(yesterday["buckets"]) == 24  # hours, the default bucket
    assert yesterday["points"] == []  # today's request is outside the range


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"start_date": "2026-11-02"}, "end_date"),
        ({"end_date": "2026-11-02"}, "start_date"),
        ({"start_date": "2026-11-05", "end_date": "2026-11-02"}, "end_date"),
        ({"start_date": "2026-11-5", "end_date": "2026-11-06"}, "start_date"),
        ({"start_date": "2026-02-30", "end_date": "2026-03-02"}, "start_date"),
        ({"start_date": "9999-12-31", "end_date": "9999-12-31"}, "start_date"),
        ({"start_date": "2026-11-01", "end_date": "2026-11-02", "hours": "24"}, "hours"),
        ({"start_date": "2026-01-01", "end_date": "2026-12-31", "bucket": "hour"}, "bucket"),
    ],
)
def test_a_bad_range_is_a_400_naming_the_parameter(query: dict[str, str], param: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_query(query, datetime(2026, 11, 27, 10, tzinfo=UTC))
    assert refused.value.status == 400
    assert refused.value.extra["param"] == param


def test_the_largest_ranges_still_answer() -> None:
    last = parse_query({"start_date": "9999-12-30", "end_date": "9999-12-30"}, datetime.now(UTC))
    assert len(last.starts()) == 24
    first = parse_query(
        {"start_date": "1970-01-01", "end_date": "1975-06-23", "bucket": "day"}, datetime.now(UTC)
    )
    assert len(first.starts()) == 2000
    assert first.since.date() == date(1970, 1, 1)


async def test_requests_that_reached_no_provider_are_summed_under_their_reason(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    for _ in range(2):
        with pytest.raises(openai.NotFoundError):
            await client.chat.completions.create(
                model="no-such-model", messages=[{"role": "user", "content": "hello"}]
            )
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], temperature=9
        )
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "served"}]
    )
    series = await ok(await http.get(f"{M}/console/usage?hours=1&bucket=minute"))
    failed = {
        (p["model"], p["reason"]): (p["requests"], p["errors"])
        for p in series["points"]
        if p["provider"] == ""
    }
    assert failed == {
        ("no-such-model", "model_not_found"): (2, 2),
        ("gpt-4o-mini", "invalid_request"): (1, 1),
    }
    served = [p for p in series["points"] if p["provider"] == "openai"]
    assert [(p["requests"], p["reason"]) for p in served] == [(1, None)]


async def test_the_caller_learns_its_role_and_what_it_may_do(http: httpx.AsyncClient) -> None:
    owner = await ok(await http.get(f"{M}/me"))
    assert owner["object"] == "caller"
    assert owner["role"] == "owner"
    assert "configure_providers" in owner["actions"]
    assert "chat" in owner["permissions"]
    viewer = await ok(
        await http.post(f"{M}/service-accounts", json={"name": "viewer", "role": "viewer"}), 201
    )
    seen = await ok(await http.get(f"{M}/me", headers=bearer(viewer["api_key"])))
    assert seen["kind"] == "service_account"
    assert seen["role"] == "viewer"
    assert seen["actions"] == ["view_analytics"]
    assert seen["permissions"] == ["management"]
    assert seen["workspace_id"] in seen["workspaces"]
    plain = await ok(
        await http.post(f"{M}/api-keys", json={"name": "chat only", "permissions": ["chat"]}),
        201,
    )
    refused = await http.get(f"{M}/me", headers=bearer(plain["key"]))
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "insufficient_permissions"
    anonymous = await http.get(f"{M}/me", headers={"authorization": ""})
    assert anonymous.status_code == 401


async def test_a_person_is_described_by_email_with_no_key_permissions(
    http: httpx.AsyncClient,
) -> None:
    _, token = await join(http, {}, "grace@example.com", "developer")
    seen = await ok(await http.get(f"{M}/me", headers=bearer(token)))
    assert (seen["kind"], seen["name"], seen["role"]) == ("user", "grace@example.com", "developer")
    assert seen["permissions"] == []
    assert "view_configuration" in seen["actions"] and "create_api_keys" not in seen["actions"]


async def test_the_caller_is_described_in_the_workspace_it_names(http: httpx.AsyncClient) -> None:
    made = await ok(await http.post(f"{M}/workspaces", json={"name": "second"}), 201)
    there = await ok(await http.get(f"{M}/me", headers={"x-workspace-id": made["id"]}))
    assert there["workspace_id"] == made["id"]
    assert made["id"] in there["workspaces"]
    unknown = await http.get(f"{M}/me", headers={"x-workspace-id": "ws_nowhere"})
    assert unknown.status_code == 404


async def test_exports_are_listed_newest_first_in_their_workspace(
    http: httpx.AsyncClient,
) -> None:
    assert (await ok(await http.get(f"{M}/analytics/export")))["data"] == []
    made = []
    for fmt in ("csv", "json"):
        made.append(await ok(await http.post(f"{M}/analytics/export", json={"format": fmt}), 202))
        await trio.sleep(0.01)  # distinct creation times
    listed = await ok(await http.get(f"{M}/analytics/export"))
    assert [e["export_id"] for e in listed["data"]] == [
        made[1]["export_id"],
        made[0]["export_id"],
    ]
    one = await ok(await http.get(f"{M}/analytics/export?limit=1"))
    assert [e["format"] for e in one["data"]] == ["json"]
    other = await ok(await http.post(f"{M}/workspaces", json={"name": "elsewhere"}), 201)
    elsewhere = await ok(
        await http.get(f"{M}/analytics/export", headers={"x-workspace-id": other["id"]})
    )
    assert elsewhere["data"] == []
    bad = await http.get(f"{M}/analytics/export?limit=0")
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "limit"
