"""The sustainability reports over a known set of usage rows, through the HTTP API.

Every figure is recomputed here from the rows themselves: sums and shares in plain Python,
re-priced carbon straight from `providers.footprint` (never through the report code).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.catalog import ProviderInfo, load_catalog
from providers.footprint import estimate_usage, load_footprint_factors
from providers.types import Usage
from store import usage
from store.usage import UsageRecord
from tests.gateway.conftest import ADMIN_KEY

CATALOG = load_catalog()
PERIOD = {"start_date": "2026-03-01", "end_date": "2026-03-07"}


def at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00")


def priced(model: str, units: Usage) -> tuple[float, float]:
    """(energy, carbon) of `units` on `model` at its own provider."""
    info = CATALOG.model(model)
    assert info is not None
    provider = CATALOG.provider(info.provider)
    assert provider is not None
    found = estimate_usage(info, provider, units)
    return found.energy_kwh, found.carbon_gco2e


def row(
    n: int,
    model: str,
    day: str,
    units: Usage,
    *,
    workspace: str,
    endpoint: str = "chat",
    status: int = 200,
    cache_hit: bool = False,
    prompt_hash: str | None = None,
    project: str | None = None,
    team: str | None = None,
    hour: int = 12,
) -> UsageRecord:
    info = CATALOG.model(model)
    assert info is not None
    energy, carbon = (0.0, 0.0) if cache_hit or status >= 400 else priced(model, units)
    return UsageRecord(
        request_id=f"req_{n}",
        key_id="key_test",
        workspace_id=workspace,
        model=model,
        provider=info.provider,
        endpoint=endpoint,
        status=status,
        created_at=at(day, hour),
        prompt_tokens=units.prompt_tokens,
        completion_tokens=units.completion_tokens,
        audio_seconds=units.audio_seconds,
        energy_kwh=energy,
        carbon_gco2e=carbon,
        cache_hit=cache_hit,
        prompt_hash=prompt_hash,
        project=project,
        team=team,
    )


ASK = Usage(prompt_tokens=100, completion_tokens=500)
LONG = Usage(prompt_tokens=50, completion_tokens=1500)
CLIP = Usage(audio_seconds=60.0)


def known_rows(ws: str) -> list[UsageRecord]:
    """The period 2026-03-01..07 and the one before it, plus rows every report must skip."""
    return [
        row(1, "gpt-4o", "2026-03-01", ASK, workspace=ws, prompt_hash="h1", project="alpha"),
        row(2, "gpt-4o", "2026-03-01", ASK, workspace=ws, prompt_hash="h1", project="alpha"),
        row(3, "gpt-4o", "2026-03-02", ASK, workspace=ws, prompt_hash="h1", project="beta"),
        row(4, "gpt-4o", "2026-03-02", ASK, workspace=ws, cache_hit=True, prompt_hash="h1"),
        row(
            5, "mistral-small-latest", "2026-03-03", LONG, workspace=ws, project="alpha", team="t1"
        ),
        row(6, "mistral-small-latest", "2026-03-07", LONG, workspace=ws, team="t1", hour=23),
        row(7, "whisper-1", "2026-03-05", CLIP, workspace=ws, endpoint="audio.transcriptions"),
        # skipped: a failure, another workspace, outside the period
        row(8, "gpt-4o", "2026-03-04", ASK, workspace=ws, status=502),
        row(9, "gpt-4o", "2026-03-04", ASK, workspace="ws_other"),
        row(10, "gpt-4o", "2026-03-08", ASK, workspace=ws, hour=0),
        # the previous period (2026-02-22..28): for the trends
        row(11, "gpt-4o", "2026-02-25", ASK, workspace=ws),
        row(12, "gpt-4o", "2026-02-22", ASK, workspace=ws, hour=0),
    ]


def in_period(rows: list[UsageRecord], first: str, last: str) -> list[UsageRecord]:
    lo, hi = at(first, 0), at(last, 0) + timedelta(days=1)
    return [
        r
        for r in rows
        if r.workspace_id != "ws_other" and r.status < 400 and lo <= r.created_at < hi
    ]


@pytest.fixture
async def rows(gateway: RunningGateway) -> list[UsageRecord]:
    record = gateway.state.keyring.lookup(ADMIN_KEY)
    assert record is not None
    made = known_rows(record.workspace_id)
    await gateway.state.db.run(lambda d: usage.insert_records(d, made))
    return made


async def get(http: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await http.get(f"/v1/sustainability/{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


# ------------------------------------------------------------------------------- dashboard


async def test_the_dashboard_summary_is_the_sum_of_the_periods_served_rows(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    body = await get(http, "dashboard", **PERIOD)
    mine = in_period(rows, "2026-03-01", "2026-03-07")
    before = in_period(rows, "2026-02-22", "2026-02-28")
    carbon = sum(r.carbon_gco2e for r in mine)
    previous = sum(r.carbon_gco2e for r in before)
    tokens = sum(r.total_tokens for r in mine)
    summary = body["summary"]
    assert summary["total_requests"] == len(mine) == 7
    assert summary["total_carbon_gco2e"] == pytest.approx(carbon)
    assert summary["total_energy_kwh"] == pytest.approx(sum(r.energy_kwh for r in mine))
    assert summary["avg_carbon_per_request_gco2e"] == pytest.approx(carbon / 7)
    assert summary["carbon_per_1k_tokens_gco2e"] == pytest.approx(carbon / tokens * 1000)
    assert summary["carbon_trend_percent"] == round((carbon - previous) / previous * 100, 2)
    assert summary["efficiency_score"] == body["efficiency"]["overall_score"]
    assert body["period"] == {"start_date": "2026-03-01", "end_date": "2026-03-07", "days": 7}


async def test_the_breakdowns_add_up_to_100_and_match_the_rows(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    summary = (await get(http, "dashboard", **PERIOD))["summary"]
    mine = in_period(rows, "2026-03-01", "2026-03-07")
    total = sum(r.carbon_gco2e for r in mine)
    for field, name in (("breakdown_by_model", "model"), ("breakdown_by_provider", "provider")):
        entries = summary[field]
        expected: dict[str, float] = {}
        for r in mine:
            key = getattr(r, name)
            expected[key] = expected.get(key, 0.0) + r.carbon_gco2e
        assert {e[name]: e["carbon_gco2e"] for e in entries} == pytest.approx(expected)
        assert [e["carbon_gco2e"] for e in entries] == sorted(expected.values(), reverse=True)
        assert round(sum(e["percentage"] for e in entries), 2) == 100.0
        for e in entries:
            assert e["percentage"] == pytest.approx(e["carbon_gco2e"] / total * 100, abs=0.01)


async def test_the_time_series_has_every_day_of_the_period(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    series = (await get(http, "dashboard", **PERIOD))["time_series"]
    mine = in_period(rows, "2026-03-01", "2026-03-07")
    assert [p["date"] for p in series] == [f"2026-03-0{d}" for d in range(1, 8)]
    for point in series:
        day = [r for r in mine if r.created_at.date().isoformat() == point["date"]]
        assert point["requests"] == len(day)
        assert point["carbon_gco2e"] == pytest.approx(sum(r.carbon_gco2e for r in day))
        assert point["energy_kwh"] == pytest.approx(sum(r.energy_kwh for r in day))
    assert series[5]["requests"] == 0 and series[5]["carbon_gco2e"] == 0.0


async def test_project_and_team_filters_narrow_every_figure(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    mine = in_period(rows, "2026-03-01", "2026-03-07")
    for params, chosen in (
        ({"project_id": "alpha"}, [r for r in mine if r.project == "alpha"]),
        ({"team_id": "t1"}, [r for r in mine if r.team == "t1"]),
        ({"project_id": "alpha", "team_id": "t1"}, [r for r in mine if r.request_id == "req_5"]),
    ):
        summary = (await get(http, "dashboard", **PERIOD, **params))["summary"]
        assert summary["total_requests"] == len(chosen)
        assert summary["total_carbon_gco2e"] == pytest.approx(sum(r.carbon_gco2e for r in chosen))


async def test_an_empty_period_gives_zeros_and_empty_lists(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    body = await get(http, "dashboard", start_date="2025-01-01", end_date="2025-01-03")
    assert body["summary"] == {
        "total_carbon_gco2e": 0.0,
        "total_energy_kwh": 0.0,
        "total_requests": 0,
        "avg_carbon_per_request_gco2e": 0.0,
        "carbon_per_1k_tokens_gco2e": 0.0,
        "carbon_trend_percent": 0.0,
        "breakdown_by_model": [],
        "breakdown_by_provider": [],
        "efficiency_score": 0,
    }
    assert body["opportunities"] == []
    assert body["efficiency"]["overall_score"] == 0 and body["efficiency"]["grade"] == "F"
    assert [p["requests"] for p in body["time_series"]] == [0, 0, 0]
    found = await get(http, "optimization-opportunities", days="90", project_id="nobody")
    assert found == {
        "opportunities": [],
        "total_potential_savings_kg_co2": 0.0,
        "total_potential_savings_percent": 0.0,
        "analysis_period_days": 90,
        "analyzed_requests": 0,
    }


async def test_the_default_time_range_is_the_last_seven_days(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    today = datetime.now(UTC).date()
    body = await get(http, "dashboard")
    assert body["period"]["end_date"] == today.isoformat()
    assert body["period"]["start_date"] == (today - timedelta(days=6)).isoformat()
    quarter = await get(http, "dashboard", time_range="this_quarter")
    first_month = (today.month - 1) // 3 * 3 + 1
    assert quarter["period"]["start_date"] == date(today.year, first_month, 1).isoformat()
    month = await get(http, "efficiency-score", time_range="this_month")
    assert month["period"]["start_date"] == today.replace(day=1).isoformat()
    thirty = await get(http, "efficiency-score", time_range="last_30_days")
    assert thirty["period"]["days"] == 30


@pytest.mark.parametrize(
    ("path", "params", "param", "code"),
    [
        ("dashboard", {"time_range": "last_year"}, "time_range", "invalid_request"),
        ("dashboard", {"start_date": "2026-03-01"}, "end_date", "invalid_period"),
        (
            "dashboard",
            {"start_date": "2026-03-08", "end_date": "2026-03-01"},
            "end_date",
            "invalid_period",
        ),
        (
            "dashboard",
            {"start_date": "2026-3-1", "end_date": "2026-03-09"},
            "start_date",
            "invalid_request",
        ),
        (
            "dashboard",
            {"start_date": "2024-01-01", "end_date": "2026-01-01"},
            "end_date",
            "invalid_period",
        ),
        ("dashboard", {**PERIOD, "time_range": "last_7_days"}, "time_range", "invalid_period"),
        ("efficiency-score", {"end_date": "2026-03-01"}, "start_date", "invalid_period"),
        ("optimization-opportunities", {"days": "0"}, "days", "invalid_request"),
        ("optimization-opportunities", {"days": "91"}, "days", "invalid_request"),
        ("optimization-opportunities", {"days": "seven"}, "days", "invalid_request"),
        ("optimization-summary", {"days": "-1"}, "days", "invalid_request"),
    ],
)
async def test_bad_parameters_are_400_naming_the_parameter(
    http: httpx.AsyncClient,
    gateway: RunningGateway,
    path: str,
    params: dict[str, str],
    param: str,
    code: str,
) -> None:
    """A malformed value is `invalid_request`; dates that are each valid but do not make
    a period together are `invalid_period`."""
    response = await http.get(f"/v1/sustainability/{path}", params=params)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["param"]) == (code, param)


async def test_the_reports_need_a_credential(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url) as anonymous:
        response = await anonymous.get("/v1/sustainability/dashboard")
    assert response.status_code == 401


async def test_a_key_without_a_role_is_told_so_in_plain_words(http: httpx.AsyncClient) -> None:
    """The 403 said "The this API key may not view analytics."."""
    created = await http.post("/v1/management/api-keys", json={"name": "plain", "type": "prod"})
    assert created.status_code == 201, created.text
    headers = {"Authorization": f"Bearer {created.json()['key']}"}
    response = await http.get("/v1/sustainability/dashboard", headers=headers)
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "This API key may not view analytics."


# ------------------------------------------------------------------------ efficiency score


def reference() -> ProviderInfo:
    f = load_footprint_factors()
    return ProviderInfo("ref", "ref", "", (), (), f.default_region, f.default_pue, "")


def expected_components(mine: list[UsageRecord]) -> dict[str, tuple[float, int]]:
    """(current_value, score) of each component, from the published formulas."""
    ref = reference()
    baseline = 0.0
    for r in mine:
        info = CATALOG.model(r.model)
        assert info is not None
        units = Usage(r.prompt_tokens, r.completion_tokens, audio_seconds=r.audio_seconds)
        baseline += estimate_usage(info, ref, units).carbon_gco2e
    actual = sum(r.carbon_gco2e for r in mine)
    savings = (1 - actual / baseline) * 100
    chat = [r for r in mine if r.endpoint == "chat"]
    cache = sum(r.cache_hit for r in chat) / len(chat) * 100
    intensity = actual / sum(r.energy_kwh for r in mine)
    world = load_footprint_factors().intensity("world")
    return {
        "carbon_savings_rate": (savings, round(min(1.0, savings / 30) * 100)),
        "cache_hit_rate": (cache, round(min(1.0, cache / 30) * 100)),
        "grid_efficiency": (
            intensity,
            round(max(0, min(1, (world - intensity) / (world - 100))) * 100),
        ),
    }


def overall(components: dict[str, tuple[float, int]]) -> int:
    weights = {"carbon_savings_rate": 0.4, "cache_hit_rate": 0.3, "grid_efficiency": 0.3}
    return round(sum(weights[name] * s for name, (_, s) in components.items()))


async def test_the_efficiency_score_follows_the_published_formulas(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    body = await get(http, "efficiency-score", **PERIOD)
    mine = in_period(rows, "2026-03-01", "2026-03-07")
    expected = expected_components(mine)
    for name, (value, score) in expected.items():
        component = body["components"][name]
        assert component["current_value"] == pytest.approx(value), name
        assert component["score"] == score, name
    assert {n: c["weight"] for n, c in body["components"].items()} == {
        "carbon_savings_rate": 0.4,
        "cache_hit_rate": 0.3,
        "grid_efficiency": 0.3,
    }
    assert body["components"]["grid_efficiency"]["unit"] == "gCO2e/kWh"
    assert body["overall_score"] == overall(expected)
    assert body["recommendations"]


async def test_the_score_trend_compares_with_the_previous_period(
    http: httpx.AsyncClient, rows: list[UsageRecord]
) -> None:
    body = await get(http, "efficiency-score", **PERIOD)
    before = overall(expected_components(in_period(rows, "2026-02-22", "2026-02-28")))
    now = body["overall_score"]
    assert body["trend"]["previous_score"] == before
    assert body["trend"]["change_percent"] == round((now - before) / before * 100, 2)
    assert body["trend"]["direction"] == ("improving" if now > before else "declining")
    # The percentile ranks the period among the workspace's own days of the 30 before it:
    # two days with traffic (2026-02-22 and 2026-02-25), each scoring `day`.
    day = overall(expected_components(in_period(rows, "2026-02-25", "2026-02-25")))
    assert body["percentile"] == (100 if day <= now else 0)


# --------------------------------------------------------------------------- opportunities


def carbon(model: str, units: Usage) -> float:
    return priced(model, units)[1]


async def test_opportunities_over_a_known_window(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    """Rows dated within the last week, so that `days` covers them whatever today is."""
    record = gateway.state.keyring.lookup(ADMIN_KEY)
    assert record is not None
    ws, today = record.workspace_id, datetime.now(UTC).date()
    d1, d2 = (today - timedelta(days=1)).isoformat(), today.isoformat()
    made = [
        row(1, "gpt-5.5", d1, ASK, workspace=ws, prompt_hash="h1", hour=1),
        row(2, "gpt-5.5", d1, ASK, workspace=ws, prompt_hash="h1", hour=2),
        row(3, "gpt-5.5", d1, ASK, workspace=ws, prompt_hash="h1", hour=3),
        row(4, "mistral-small-latest", d2, LONG, workspace=ws, hour=0),
        row(5, "mistral-small-latest", d2, LONG, workspace=ws, hour=0),
    ]
    await gateway.state.db.run(lambda d: usage.insert_records(d, made))
    body = await get(http, "optimization-opportunities", days="2")
    total = sum(r.carbon_gco2e for r in made)
    by_type = {o["type"]: o for o in body["opportunities"]}
    gpt = sum(r.carbon_gco2e for r in made[:3])
    gpt_units = Usage(300, 1500)
    long_units = Usage(100, 3000)
    mistral = sum(r.carbon_gco2e for r in made[3:])
    # gpt-5.5 (94) -> the lowest-carbon available openai model within 15 points below it
    # (gpt-6-luna and gpt-5.6-luna, 18B, since the November catalog); mistral-small (78)
    # -> codestral (72)
    lighter = min(
        carbon(m.id, gpt_units)
        for m in CATALOG.models(provider="openai", capability="chat")
        if m.type == "chat" and m.status == "available" and 94 - 15 <= m.quality < 94
    )
    assert lighter == carbon("gpt-6-luna", gpt_units)
    expected_g = {
        "enable_caching": gpt * 2 / 3,
        "token_optimization": carbon("mistral-small-latest", Usage(completion_tokens=1000)),
        "model_downgrade": (gpt - lighter) + (mistral - carbon("codestral-latest", long_units)),
    }
    active = gateway.state.registry.active_ids(ws)
    eligible = [
        m
        for m in CATALOG.models(capability="chat")
        if m.type == "chat" and m.status == "available" and m.provider in active and m.quality >= 70
    ]
    choice = min(eligible, key=lambda m: carbon(m.id, Usage(completion_tokens=500)))
    expected_g["green_routing"] = sum(
        max(0.0, spent - carbon(choice.id, units))
        for spent, units in ((gpt, gpt_units), (mistral, long_units))
    )
    assert set(by_type) == set(expected_g)
    affected = {"enable_caching": 2, "token_optimization": 2, "model_downgrade": 5}
    for kind, grams in expected_g.items():
        item = by_type[kind]
        kg = grams / 1000 * 30 / 2
        assert item["potential_savings_kg_co2"] == pytest.approx(kg), kind
        assert item["potential_savings_percent"] == pytest.approx(grams / total * 100), kind
        assert item["priority"] == ("high" if kg > 1 else "medium" if kg >= 0.5 else "low")
        assert item["id"] == f"opp_{kind}"
        assert set(item["implementation"]) == {
            "action",
            "code_change",
            "dashboard_path",
            "api_endpoint",
        }
        assert set(item["impact"]) == {"quality_impact", "latency_impact", "cost_impact"}
        if kind in affected:
            assert item["affected_requests_percent"] == pytest.approx(affected[kind] / 5 * 100)
    savings = [o["potential_savings_kg_co2"] for o in body["opportunities"]]
    assert savings == sorted(savings, reverse=True)
    capped = min(sum(expected_g.values()), total)
    assert body["total_potential_savings_kg_co2"] == pytest.approx(capped / 1000 * 15)
    assert body["total_potential_savings_percent"] == pytest.approx(capped / total * 100)
    assert body["analyzed_requests"] == 5

    summary = await get(http, "optimization-summary", days="2")
    assert summary["total_opportunities"] == 4
    assert summary["total_potential_savings_kg_co2"] == body["total_potential_savings_kg_co2"]
    assert summary["high_priority_count"] == sum(
        1 for o in body["opportunities"] if o["priority"] == "high"
    )
    assert len(summary["quick_wins"]) == 3  # caching, green routing, max_tokens
    dashboard = await get(http, "dashboard", start_date=d1, end_date=d2)
    assert [o["type"] for o in dashboard["opportunities"]] == [
        o["type"] for o in body["opportunities"]
    ]
    assert isinstance(dashboard["opportunities"][0]["implementation"], str)
