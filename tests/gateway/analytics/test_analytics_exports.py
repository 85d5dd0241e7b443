"""Analytics exports through the HTTP interface: processing, then complete; the file in each
format holds exactly the period's rows of the workspace; it expires and is deleted."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
import trio

from gateway.analytics.export_build import expire_due
from gateway.app.server import RunningGateway
from store.usage import UsageRecord, insert_records
from tests.gateway.analytics import usage_set as u
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.org_world import bearer, build_world

E = "/v1/management/analytics/export"


async def seed(gateway: RunningGateway) -> list[UsageRecord]:
    rows = u.build_rows(("key_a", "key_b"))
    await gateway.state.db.run(lambda d: insert_records(d, rows))
    return u.in_period(rows)


async def completed(http: httpx.AsyncClient, body: dict[str, Any]) -> Any:
    """Create an export and wait (bounded) for the worker to finish it."""
    created = await http.post(E, json=body)
    assert created.status_code == 202, created.text
    record = created.json()
    assert record["status"] == "processing"
    assert record["download_url"] is None and record["expires_at"] is None
    with trio.fail_after(20):
        while record["status"] == "processing":
            await trio.sleep(0.02)
            record = (await http.get(f"{E}/{record['export_id']}")).json()
    assert record["status"] == "complete", record
    return record


def download_path(record: dict[str, Any]) -> str:
    url = str(record["download_url"])
    assert url.endswith(f"{E}/{record['export_id']}/download")
    return url[url.index("/v1/") :]


def expected_usage(rows: list[UsageRecord], section: str) -> list[tuple[str, int, float]]:
    chosen = rows if section == "usage" else [r for r in rows if r.status >= 400]
    ordered = sorted(chosen, key=lambda r: r.created_at)
    return [(r.request_id, r.status, r.cost_usd) for r in ordered]


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
async def test_an_export_holds_exactly_the_periods_rows(
    gateway: RunningGateway, http: httpx.AsyncClient, fmt: str
) -> None:
    rows = await seed(gateway)
    record = await completed(
        http, {**u.PERIOD, "format": fmt, "include": ["usage", "errors", "costs"]}
    )
    assert record["include"] == ["usage", "costs", "errors"]
    assert datetime.fromisoformat(record["expires_at"]) > datetime.now(UTC)
    response = await http.get(download_path(record))
    assert response.status_code == 200
    content_type = {
        "csv": "text/csv; charset=utf-8",
        "json": "application/json",
        "parquet": "application/vnd.apache.parquet",
    }
    assert response.headers["content-type"] == content_type[fmt]
    sections = parse(fmt, response.content)
    for section in ("usage", "errors"):
        got = [(r["request_id"], int(r["status"]), float(r["cost_usd"])) for r in sections[section]]
        assert got == expected_usage(rows, section)
    costs = {(c["date"], c["provider"], c["model"]): c for c in sections["costs"]}
    grouped = u.group(rows, lambda r: (r.created_at.date().isoformat(), r.provider, r.model))
    assert set(costs) == set(grouped)
    for key, members in grouped.items():
        assert int(costs[key]["requests"]) == len(members)
        assert float(costs[key]["cost_usd"]) == pytest.approx(sum(r.cost_usd for r in members))
    assert record["rows"] == sum(len(v) for v in sections.values())


def parse(fmt: str, content: bytes) -> dict[str, list[dict[str, Any]]]:
    if fmt == "json":
        document = json.loads(content)
        return {name: document[name] for name in ("usage", "costs", "errors")}
    if fmt == "csv":
        table = list(csv.DictReader(io.StringIO(content.decode())))
    else:
        table = pq.read_table(io.BytesIO(content)).to_pylist()
    sections: dict[str, list[dict[str, Any]]] = {"usage": [], "costs": [], "errors": []}
    for row in table:
        sections[row["section"]].append(row)
    return sections


async def test_an_export_is_downloadable_until_it_expires_then_its_file_is_gone(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await seed(gateway)
    record = await completed(http, {**u.PERIOD, "format": "csv", "include": ["errors"]})
    path = gateway.state.exports.folder / f"{record['export_id']}.csv"
    assert path.exists()
    assert (await http.get(download_path(record))).status_code == 200
    expires = datetime.fromisoformat(record["expires_at"])
    assert await expire_due(gateway.state.analytics, expires - timedelta(seconds=1)) == 0
    assert path.exists()
    assert await expire_due(gateway.state.analytics, expires) == 1
    assert not path.exists()
    gone = await http.get(download_path(record))
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "export_expired"
    after = (await http.get(f"{E}/{record['export_id']}")).json()
    assert after["status"] == "expired" and after["download_url"] is None


async def test_another_workspace_cannot_see_or_download_an_export(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    await seed(gateway)
    record = await completed(http, {**u.PERIOD, "format": "json", "include": ["usage"]})
    world = await build_world(http, ADMIN_KEY)
    stranger = bearer(world.other_key)
    for path in (f"{E}/{record['export_id']}", download_path(record), f"{E}/exp_unknown"):
        response = await http.get(path, headers=stranger)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "export_not_found"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"format": "xlsx"}, "format"),
        ({"include": ["usage", "secrets"]}, "include[1]"),
        ({"include": []}, "include"),
        ({"include": "usage"}, "include"),
        ({"start_date": "2026-02-30"}, "start_date"),
        ({"start_date": "2026-03-02", "end_date": "2026-03-01"}, "end_date"),
        ({"colour": "blue"}, "colour"),
    ],
)
async def test_bad_export_requests_are_a_400_naming_the_field(
    gateway: RunningGateway, http: httpx.AsyncClient, body: dict[str, Any], param: str
) -> None:
    response = await http.post(E, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_a_processing_export_cannot_be_downloaded_yet(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    from store import exports as store
    from store.exports import ExportRecord

    record = ExportRecord(
        id="exp_waiting",
        workspace_id="default",
        status="processing",
        format="csv",
        include=("usage",),
        start_date="2026-03-01",
        end_date="2026-03-01",
        created_at=datetime.now(UTC),
    )
    await gateway.state.db.run(lambda d: store.insert(d, record))  # not queued: stays processing
    response = await http.get(f"{E}/exp_waiting/download")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "export_not_ready"
