"""The worked example of docs/sustainability.md, reproduced through the HTTP API.

The document's `worked-example` block lists each figure as `name: value` with the value
rounded as printed; the same four requests are recorded here and every figure the API
returns must round to what the document says.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.app.server import RunningGateway
from providers.types import Usage
from store import usage
from tests.gateway.conftest import ADMIN_KEY
from tests.gateway.test_sustainability_api import get, row

DOC = Path(__file__).parents[2] / "docs" / "sustainability.md"


def documented() -> dict[str, str]:
    text = DOC.read_text("utf-8")
    block = re.search(r"```worked-example\n(.*?)```", text, re.S)
    assert block is not None, "docs/sustainability.md lacks its worked-example block"
    pairs = (line.split(":", 1) for line in block.group(1).splitlines() if ":" in line)
    return {name.strip(): value.strip() for name, value in pairs}


def figures(
    dashboard: dict[str, Any], score: dict[str, Any], found: dict[str, Any]
) -> dict[str, Any]:
    summary = dashboard["summary"]
    by_type = {o["type"]: o for o in found["opportunities"]}
    components = score["components"]
    return {
        "total_requests": summary["total_requests"],
        "total_energy_kwh": summary["total_energy_kwh"],
        "total_carbon_gco2e": summary["total_carbon_gco2e"],
        "avg_carbon_per_request_gco2e": summary["avg_carbon_per_request_gco2e"],
        "carbon_per_1k_tokens_gco2e": summary["carbon_per_1k_tokens_gco2e"],
        "share_openai_percent": summary["breakdown_by_provider"][0]["percentage"],
        "carbon_savings_rate_percent": components["carbon_savings_rate"]["current_value"],
        "carbon_savings_rate_score": components["carbon_savings_rate"]["score"],
        "cache_hit_rate_percent": components["cache_hit_rate"]["current_value"],
        "cache_hit_rate_score": components["cache_hit_rate"]["score"],
        "grid_efficiency_gco2_per_kwh": components["grid_efficiency"]["current_value"],
        "grid_efficiency_score": components["grid_efficiency"]["score"],
        "overall_score": score["overall_score"],
        "grade": score["grade"],
        **{f"{kind}_kg_per_month": o["potential_savings_kg_co2"] for kind, o in by_type.items()},
        **{f"{kind}_priority": o["priority"] for kind, o in by_type.items()},
    }


async def test_the_worked_example_is_what_the_api_answers(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    record = gateway.state.keyring.lookup(ADMIN_KEY)
    assert record is not None
    ws = record.workspace_id
    ask, long = Usage(100, 500), Usage(50, 1500)
    today = datetime.now(UTC).date()

    def day(n: int) -> str:  # the week is the last seven days, today included
        return (today - timedelta(days=6 - n)).isoformat()

    rows = [
        row(1, "gpt-4o", day(0), ask, workspace=ws, prompt_hash="same"),
        row(2, "gpt-4o", day(1), ask, workspace=ws, prompt_hash="same"),
        row(3, "gpt-4o", day(1), ask, workspace=ws, prompt_hash="same", cache_hit=True),
        row(4, "mistral-small-latest", day(3), long, workspace=ws),
    ]
    await gateway.state.db.run(lambda d: usage.insert_records(d, rows))
    dashboard = await get(http, "dashboard")
    score = await get(http, "efficiency-score")
    found = await get(http, "optimization-opportunities", days="7")
    actual = figures(dashboard, score, found)
    expected = documented()
    for name, value in expected.items():
        assert name in actual, name
        got = actual[name]
        if isinstance(got, str):
            assert got == value, name
            continue
        decimals = len(value.split(".")[1]) if "." in value else 0
        assert round(float(got), decimals) == pytest.approx(float(value)), name
