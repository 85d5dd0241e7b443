"""Dates at the edge of the calendar: every analytics page and the export answer them with a
400 naming the parameter, or with figures; never a 500, and never an export accepted that
fails afterwards (`end_date=9999-12-31` overflowed the day after it)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from gateway.app.server import RunningGateway

A = "/v1/management/analytics"
PAGES = ["/usage", "/usage/models", "/usage/api-keys", "/costs", "/performance", "/errors"]
PAGES += ["/cache"]
REFUSED = [
    ({"end_date": "9999-12-31"}, "end_date"),
    ({"start_date": "9999-12-31"}, "start_date"),
    ({"start_date": "2026-01-01", "end_date": "9999-12-31"}, "end_date"),
    ({"start_date": "0001-01-01", "end_date": "0001-01-02"}, "start_date"),
    ({"end_date": "0001-01-05"}, "end_date"),
]
# The latest days a period may name, and a start alone whose 30 days would run past them.
ANSWERED = [
    {"start_date": "9999-12-01", "end_date": "9999-12-30"},
    {"start_date": "9999-12-20"},
    {"start_date": "1970-01-01", "end_date": "1970-01-31"},
]


@pytest.mark.parametrize("page", PAGES)
async def test_far_dates_are_a_400_naming_the_parameter_on_every_page(
    http: httpx.AsyncClient, page: str
) -> None:
    for params, param in REFUSED:
        response = await http.get(f"{A}{page}", params=params)
        assert response.status_code == 400, (params, response.text)
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("invalid_request", param), params
    for params in ANSWERED:
        for granularity in ("day", "week", "month") if page in ("/usage", "/costs") else ("",):
            query = params | ({"granularity": granularity} if granularity else {})
            response = await http.get(f"{A}{page}", params=query)
            assert response.status_code == 200, (query, response.text)


async def test_an_export_with_far_dates_is_refused_or_completes(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    export = f"{A}/export"
    for params, param in REFUSED:
        response = await http.post(export, json={"format": "csv", **params})
        assert response.status_code == 400, (params, response.text)
        assert response.json()["error"]["param"] == param
    for params in ANSWERED:
        created = await http.post(export, json={"format": "json", **params})
        assert created.status_code == 202, created.text
        record: dict[str, Any] = created.json()
        with trio.fail_after(20):
            while record["status"] == "processing":
                await trio.sleep(0.02)
                record = (await http.get(f"{export}/{record['export_id']}")).json()
        assert record["status"] == "complete", record
