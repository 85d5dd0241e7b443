"""Every figure of every analytics page, compared with the same figure computed in the test
from a known set of usage rows (`usage_set`), through the real HTTP interface."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from store.latency_sketch import RELATIVE_ACCURACY
from store.usage import UsageRecord, insert_records
from tests.gateway.analytics import usage_set as u
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.org_world import build_world

A = "/v1/management/analytics"
USD = pytest.approx  # the pages round USD to 6 decimals


def usd(value: float) -> Any:
    return USD(value, abs=1e-6)


def rate(part: int, whole: int) -> Any:
    return None if whole == 0 else pytest.approx(part / whole, abs=1e-6)


async def seed(gateway: RunningGateway, http: httpx.AsyncClient) -> tuple[list[UsageRecord], str]:
    """Insert the known rows through the usage log's own insert (rollups included); one of
    the keys exists (and has a name), the others were deleted."""
    created = await http.post("/v1/management/api-keys", json={"name": "reports", "type": "prod"})
    assert created.status_code == 201
    key_id = created.json()["id"]
    rows = u.build_rows((key_id, "key_deleted_1", "key_deleted_2"))
    await gateway.state.db.run(lambda d: insert_records(d, rows))
    return u.in_period(rows), key_id


async def get(http: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await http.get(f"{A}{path}", params={**u.PERIOD, **params})
    assert response.status_code == 200, response.text
    return response.json()


def within_sketch_bound(got: float | None, exact: float) -> bool:
    assert got is not None
    return abs(got - exact) <= RELATIVE_ACCURACY * exact + 0.01


async def test_usage_totals_and_latency_percentiles(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    rows, _ = await seed(gateway, http)
    page = await get(http, "/usage")
    assert page["period"] == {"start": "2026-03-01", "end": "2026-03-03"}
    totals = page["totals"]
    prompt = sum(r.prompt_tokens for r in rows)
    completion = sum(r.completion_tokens for r in rows)
    assert totals["requests"] == len(rows)
    assert totals["tokens"] == {
        "prompt": prompt,
        "completion": completion,
        "total": prompt + completion,
    }
    assert totals["cost_usd"] == usd(sum(r.cost_usd for r in rows))
    latencies = [r.latency_ms for r in u.successes(rows)]
    for name, fraction in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        exact = u.exact_percentile(latencies, fraction)
        assert within_sketch_bound(totals["latency_ms"][name], exact), (name, exact, totals)


@pytest.mark.parametrize("granularity", ["hour", "day", "week", "month"])
async def test_usage_series_per_granularity(
    gateway: RunningGateway, http: httpx.AsyncClient, granularity: str
) -> None:
    rows, _ = await seed(gateway, http)
    label = {
        "hour": lambda r: r.created_at.strftime("%Y-%m-%dT%H:00:00Z"),
        "day": lambda r: r.created_at.date().isoformat(),
        "week": lambda r: u.week_start(r.created_at.date()).isoformat(),
        "month": lambda r: r.created_at.strftime("%Y-%m-01"),
    }[granularity]
    expected = [
        {
            "date": bucket,
            "requests": len(members),
            "tokens": sum(r.total_tokens for r in members),
            "cost_usd": usd(sum(r.cost_usd for r in members)),
        }
        for bucket, members in sorted(u.group(rows, label).items())
    ]
    page = await get(http, "/usage", granularity=granularity)
    assert page["granularity"] == granularity
    assert page["data"] == expected


@pytest.mark.parametrize(
    ("group_by", "field", "attribute"),
    [
        ("model", "model", "model"),
        ("provider", "provider", "provider"),
        ("api_key", "key_id", "key_id"),
    ],
)
async def test_usage_series_grouped(
    gateway: RunningGateway, http: httpx.AsyncClient, group_by: str, field: str, attribute: str
) -> None:
    rows, _ = await seed(gateway, http)
    grouped = u.group(rows, lambda r: (r.created_at.date().isoformat(), getattr(r, attribute)))
    expected = [
        {
            "date": day,
            field: value,
            "requests": len(members),
            "tokens": sum(r.total_tokens for r in members),
            "cost_usd": usd(sum(r.cost_usd for r in members)),
        }
        for (day, value), members in sorted(grouped.items())
    ]
    page = await get(http, "/usage", group_by=group_by)
    assert page["group_by"] == group_by
    assert page["data"] == expected


async def test_usage_per_model(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    rows, _ = await seed(gateway, http)
    page = await get(http, "/usage/models")
    grouped = u.group(rows, lambda r: (r.model, r.provider))
    expected = {}
    for (model, provider), members in grouped.items():
        ok = u.successes(members)
        expected[(model, provider)] = {
            "model": model,
            "provider": provider,
            "requests": len(members),
            "tokens": {
                "prompt": sum(r.prompt_tokens for r in members),
                "completion": sum(r.completion_tokens for r in members),
            },
            "cost_usd": usd(sum(r.cost_usd for r in members)),
            "avg_latency_ms": pytest.approx(sum(r.latency_ms for r in ok) / len(ok), abs=0.01),
        }
    assert {(m["model"], m["provider"]): m for m in page["models"]} == expected
    assert [m["requests"] for m in page["models"]] == sorted(
        (m["requests"] for m in page["models"]), reverse=True
    )


async def test_usage_per_api_key_with_rate_limit_hits(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    rows, key_id = await seed(gateway, http)
    page = await get(http, "/usage/api-keys")
    expected = {
        key: {
            "key_id": key,
            "name": "reports" if key == key_id else None,
            "requests": len(members),
            "tokens": sum(r.total_tokens for r in members),
            "cost_usd": usd(sum(r.cost_usd for r in members)),
            "rate_limit_hits": sum(1 for r in members if r.status == 429),
        }
        for key, members in u.group(rows, lambda r: r.key_id).items()
    }
    assert {k["key_id"]: k for k in page["api_keys"]} == expected


def cost_of(members: list[UsageRecord]) -> dict[str, Any]:
    billed = sum(r.cost_usd for r in members)
    saved = sum(r.cache_savings_usd for r in members)
    return {
        "cost_usd": usd(billed + saved),
        "cache_savings_usd": usd(saved),
        "effective_cost_usd": usd(billed),
    }


async def test_costs(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    rows, _ = await seed(gateway, http)
    page = await get(http, "/costs")
    assert page["totals"] == cost_of(rows)
    assert page["by_provider"] == {
        p: cost_of(m) for p, m in u.group(rows, lambda r: r.provider).items()
    }
    categories = {
        "chat": "chat",
        "embeddings": "embeddings",
        "audio.speech": "audio",
        "ocr": "other",
    }
    by_category = u.group(rows, lambda r: categories[r.endpoint])
    assert page["by_category"] == {
        name: cost_of(by_category.get(name, []))
        for name in ("chat", "embeddings", "audio", "other")
    }
    by_day = sorted(u.group(rows, lambda r: r.created_at.date().isoformat()).items())
    assert page["data"] == [{"date": day, **cost_of(m)} for day, m in by_day]


async def test_performance(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    rows, _ = await seed(gateway, http)
    page = await get(http, "/performance")
    ok = u.successes(rows)
    latencies = [r.latency_ms for r in ok]
    for name, fraction in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99)):
        assert within_sketch_bound(page["latency"][name], u.exact_percentile(latencies, fraction))
    assert page["latency"]["avg_ms"] == pytest.approx(sum(latencies) / len(latencies), abs=0.01)
    minutes = 3 * 24 * 60  # the whole period is in the past
    assert page["throughput"] == {
        "requests_per_minute": pytest.approx(len(rows) / minutes, abs=1e-6),
        "tokens_per_minute": pytest.approx(sum(r.total_tokens for r in rows) / minutes, abs=1e-6),
    }
    timeouts = sum(1 for r in rows if u.kind(r) == "timeout")
    assert page["reliability"] == {
        "success_rate": rate(len(ok), len(rows)),
        "error_rate": rate(len(rows) - len(ok), len(rows)),
        "timeout_rate": rate(timeouts, len(rows)),
    }
    for provider, members in u.group(rows, lambda r: r.provider).items():
        figures = page["by_provider"][provider]
        served = u.successes(members)
        assert figures["requests"] == len(members)
        assert figures["success_rate"] == rate(len(served), len(members))
        exact = u.exact_percentile([r.latency_ms for r in served], 0.5)
        assert within_sketch_bound(figures["latency_p50_ms"], exact)


def errors_of(members: list[UsageRecord]) -> dict[str, Any]:
    failed = [r for r in members if r.status >= 400]
    return {
        "requests": len(members),
        "total_errors": len(failed),
        "error_rate": rate(len(failed), len(members)),
        "by_type": {
            name: sum(1 for r in failed if u.kind(r) == name)
            for name in ("rate_limit", "timeout", "provider_error", "invalid_request")
        },
    }


async def test_errors(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    rows, _ = await seed(gateway, http)
    page = await get(http, "/errors")
    overall = errors_of(rows)
    assert {k: page[k] for k in overall} == overall
    assert page["by_provider"] == {
        p: errors_of(m) for p, m in u.group(rows, lambda r: r.provider).items()
    }
    assert page["by_model"] == {
        m: errors_of(g) for m, g in u.group(rows, lambda r: r.model).items()
    }


def cache_of(members: list[UsageRecord]) -> dict[str, Any]:
    served = u.successes(members)
    hits = [r for r in served if r.cache_hit]
    return {
        "hits": len(hits),
        "misses": len(served) - len(hits),
        "hit_rate": rate(len(hits), len(served)),
        "tokens_saved": sum(r.total_tokens for r in hits),
        "cost_saved_usd": usd(sum(r.cache_savings_usd for r in hits)),
    }


async def test_cache(gateway: RunningGateway, http: httpx.AsyncClient) -> None:
    rows, _ = await seed(gateway, http)
    chat = [r for r in rows if r.endpoint == "chat"]
    page = await get(http, "/cache")
    totals = cache_of(chat)
    assert totals["hits"] > 0
    assert page["totals"] == {
        "cache_hits": totals["hits"],
        "cache_misses": totals["misses"],
        "hit_rate": totals["hit_rate"],
        "tokens_saved": totals["tokens_saved"],
        "cost_saved_usd": totals["cost_saved_usd"],
    }
    assert page["by_model"] == {m: cache_of(g) for m, g in u.group(chat, lambda r: r.model).items()}


async def test_an_empty_period_has_zeros_and_nulls(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await seed(gateway, http)
    period = {"start_date": "2025-01-01", "end_date": "2025-01-02"}
    usage = (await http.get(f"{A}/usage", params=period)).json()
    assert usage["totals"]["requests"] == 0
    assert usage["totals"]["latency_ms"] == {"p50": None, "p95": None, "p99": None}
    assert usage["data"] == []
    performance = (await http.get(f"{A}/performance", params=period)).json()
    assert performance["reliability"]["success_rate"] is None


async def test_another_workspace_is_neither_counted_nor_reachable(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    rows, _ = await seed(gateway, http)
    assert (await get(http, "/usage"))["totals"]["requests"] == len(rows)
    for how in ({"params": {"workspace_id": u.OTHER}}, {"headers": {"x-workspace-id": u.OTHER}}):
        response = await http.get(f"{A}/usage", **how)  # type: ignore[arg-type]
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "workspace_not_found"


@pytest.mark.parametrize(
    ("params", "param", "code"),
    [
        ({"start_date": "2026-13-01"}, "start_date", "invalid_request"),
        ({"start_date": "yesterday"}, "start_date", "invalid_request"),
        ({"end_date": "2026-W01-1"}, "end_date", "invalid_request"),
        ({"start_date": "2026-03-05", "end_date": "2026-03-01"}, "end_date", "invalid_period"),
        ({"start_date": "2024-01-01", "end_date": "2026-01-01"}, "end_date", "invalid_period"),
        ({"granularity": "minute"}, "granularity", "invalid_request"),
        (
            {"granularity": "hour", "start_date": "2026-01-01", "end_date": "2026-03-01"},
            "granularity",
            "invalid_period",
        ),
        ({"group_by": "team"}, "group_by", "invalid_request"),
    ],
)
async def test_bad_parameters_are_a_400_naming_them(
    gateway: RunningGateway,
    http: httpx.AsyncClient,
    params: dict[str, str],
    param: str,
    code: str,
) -> None:
    """A malformed value is `invalid_request`; values that are each valid but do not make
    a period together (or an hourly series too long) are `invalid_period`."""
    response = await http.get(f"{A}/usage", params=params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert error["type"] == "invalid_request_error" and error["message"]


async def test_an_owner_reads_another_workspace_of_the_organisation_by_id(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    world = await build_world(http, ADMIN_KEY)
    rows = [
        r._replace(workspace_id=world.second_workspace) for r in u.build_rows(("key_x",), count=50)
    ]
    await gateway.state.db.run(lambda d: insert_records(d, rows))
    expected = len(u.in_period(rows, world.second_workspace))
    owner = world.as_role("owner")
    mine = await http.get(f"{A}/usage", params=u.PERIOD, headers=owner)
    assert mine.json()["totals"]["requests"] == 0
    for how in (
        {"params": {**u.PERIOD, "workspace_id": world.second_workspace}, "headers": owner},
        {
            "params": u.PERIOD,
            "headers": world.as_role("owner", **{"x-workspace-id": world.second_workspace}),
        },
    ):
        response = await http.get(f"{A}/usage", **how)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        assert response.json()["totals"]["requests"] == expected
    viewer = world.as_role("viewer")  # a member of the default workspace only
    refused = await http.get(
        f"{A}/usage", params={"workspace_id": world.second_workspace}, headers=viewer
    )
    assert refused.status_code == 404
