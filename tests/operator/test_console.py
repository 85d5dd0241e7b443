"""The web console in Debian's headless Chromium: sign in, charts drawn from real requests
over every bucket of the range, keys, rules and providers configured through its forms,
workspaces, members, service accounts, the audit log, exports, the playground; a viewer
who can change nothing and is told why; every page at 420 px; no error in the browser's
console on any page.

One browser serves the whole module (each test signs in to its own gateway). Screenshots
of every page land in test-artifacts/console/.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from tests.gateway.org_world import bearer, ok
from tests.operator.browser import Browser
from tests.operator.console_steps import (
    PAGES,
    UNLABELLED,
    M,
    click_in_row,
    console_errors,
    go,
    in_browser,
    row_with,
    rows,
    sign_in,
)

CHART_SUMS = (
    "return Chart.getChart(document.getElementById(arguments[0]))"
    ".data.datasets.map(d => d.data.reduce((a, b) => a + b, 0));"
)
CHART_LABELS = "return Chart.getChart(document.getElementById(arguments[0])).data.labels;"
CHART_DATA = (
    "return Chart.getChart(document.getElementById(arguments[0])).data.datasets.map(d => d.data);"
)


def chart_total(browser: Browser, chart: str) -> float:
    sums: list[float] = browser.script(CHART_SUMS, chart)
    return sum(sums)


# -- the charts, keys, rules and playground ----------------------------------------------------


async def make_traffic(client: openai.AsyncOpenAI, http: httpx.AsyncClient) -> str:
    """Real requests for the charts (one refused before any provider), and a routing rule
    to toggle; the rule's id."""
    for model in ("gpt-4o-mini", "gpt-4o-mini", "claude-haiku-4-5"):
        await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": f"Hello from the console test ({model})"}],
            extra_body={"service": {"cache": "skip"}},
        )
    await client.embeddings.create(model="text-embedding-3-small", input="console")
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "refused"}]
        )
    rule = await ok(
        await http.post(
            f"{M}/routing-rules",
            json={
                "name": "console rule",
                "priority": 5,
                "conditions": {"models": ["gpt-4o"]},
                "actions": {"route_to": "gpt-4o-mini"},
            },
        ),
        201,
    )
    rule_id: str = rule["id"]
    return rule_id


def check_charts(browser: Browser, url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    browser.until(lambda d: chart_total(browser, "chart-requests") >= 5)
    seen["requests"] = chart_total(browser, "chart-requests")
    seen["tokens"] = chart_total(browser, "chart-tokens")
    seen["cost"] = chart_total(browser, "chart-cost")
    seen["buckets"] = browser.script(CHART_DATA, "chart-requests")
    browser.screenshot("usage")
    go(browser, url, "carbon")
    seen["energy"] = chart_total(browser, "chart-energy")
    seen["carbon"] = chart_total(browser, "chart-carbon")
    browser.screenshot("carbon")
    go(browser, url, "traffic")
    seen["models"] = browser.script(CHART_LABELS, "chart-models")
    seen["providers"] = browser.script(CHART_LABELS, "chart-providers")
    seen["traffic_rows"] = rows(browser, "traffic-table")
    browser.screenshot("traffic")
    seen["custom"] = custom_range(browser)
    return seen


def custom_range(browser: Browser) -> list[Any]:
    """Today alone as a custom range: 24 hourly buckets, today's requests in one of them."""
    today = datetime.now(UTC).date().isoformat()
    go_usage = "location.hash = '#usage'"
    browser.script(go_usage)
    browser.page_loaded("usage")
    browser.find("#period")
    browser.script(
        "const s = document.getElementById('period'); s.value = 'custom';"
        "s.dispatchEvent(new Event('change'));"
    )
    browser.script(
        "document.getElementById('range-start').value = arguments[0];"
        "document.getElementById('range-end').value = arguments[0];",
        today,
    )
    browser.click("#range-form button")
    browser.until(lambda d: len(browser.script(CHART_LABELS, "chart-requests")) == 24)
    browser.screenshot("usage-custom-range")
    data: list[Any] = browser.script(CHART_DATA, "chart-requests")
    return data


def create_and_revoke_key(browser: Browser, url: str) -> str:
    go(browser, url, "keys")
    browser.type("#key-name", "made in the browser")
    browser.click("#key-form button[type=submit]")
    secret: str = browser.find("#key-secret code").text
    assert secret.startswith("gw_prod_")
    row_with(browser, "keys-table", "made in the browser")
    browser.screenshot("keys")
    click_in_row(browser, "keys-table", "made in the browser", "button[data-revoke]")
    browser.accept_confirm()
    browser.until(
        lambda d: any(
            "made in the browser" in r and "revoked" in r for r in rows(browser, "keys-table")
        )
    )
    click_in_row(browser, "keys-table", "made in the browser", "button[data-delete]")
    browser.accept_confirm()
    browser.until(
        lambda d: not any("made in the browser" in r for r in rows(browser, "keys-table"))
    )
    return secret


def disable_and_delete_rule(browser: Browser, url: str, rule_id: str) -> None:
    go(browser, url, "rules")
    browser.click(f"button[data-toggle='{rule_id}']")
    browser.until(lambda d: browser.find(f"button[data-toggle='{rule_id}']").text == "Enable")
    browser.click(f"button[data-delete='{rule_id}']")
    browser.accept_confirm()
    browser.until(lambda d: not any("console rule" in r for r in rows(browser, "rules-table")))


def run_playground(browser: Browser, url: str) -> str:
    go(browser, url, "playground")
    browser.type("#play-prompt", "Tell me about streams")
    browser.click("#play-send")
    browser.until(lambda d: browser.find("#play-output").get_attribute("data-done") == "true")
    browser.screenshot("playground")
    text: str = browser.find("#play-output").text
    meta: str = browser.find("#play-meta").text
    return text + "\n" + meta


def every_page_at_420_px(browser: Browser, url: str) -> dict[str, int]:
    """Each page at 420 px wide: how far it overflows sideways (0: not at all)."""
    overflow = {}
    browser.width(420)
    for page in PAGES:
        go(browser, url, page)
        overflow[page] = browser.script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        browser.screenshot(f"narrow-{page}")
    browser.driver.set_window_size(1400, 1000)
    return overflow


def scenario(browser: Browser, url: str, rule_id: str) -> dict[str, Any]:
    browser.console_errors()
    sign_in(browser, url)
    seen = check_charts(browser, url)
    seen["secret"] = create_and_revoke_key(browser, url)
    disable_and_delete_rule(browser, url, rule_id)
    seen["playground"] = run_playground(browser, url)
    seen["overflow"] = every_page_at_420_px(browser, url)
    seen["unlabelled"] = browser.script(UNLABELLED)
    seen["errors"] = console_errors(browser)
    browser.click("#signout")
    browser.find("#signin-key")
    seen["after_signout"] = browser.script("return sessionStorage.getItem('gateway.console.key')")
    return seen


async def test_console_in_a_real_browser(
    browser: Browser,
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
) -> None:
    rule_id = await make_traffic(client, http)
    seen = await in_browser(scenario, browser, gateway.url, rule_id)
    assert seen["requests"] >= 5  # three chats, an embedding and the refused one, at least
    assert seen["tokens"] > 0
    assert seen["cost"] > 0
    assert seen["energy"] > 0
    assert seen["carbon"] > 0
    # "last 24 hours" is 24 bars, the empty ones drawn as zero, today's requests in the last.
    served, failed = seen["buckets"]
    assert len(served) == 24
    assert served[:-1] == [0] * 23 and served[-1] >= 4
    assert failed[-1] >= 1
    assert {"gpt-4o-mini", "claude-haiku-4-5", "no-such-model"} <= set(seen["models"])
    assert {"openai", "anthropic", "none reached (model_not_found)"} <= set(seen["providers"])
    failed_row = "none reached (model_not_found) no-such-model"
    assert any(r.startswith(failed_row) for r in seen["traffic_rows"])
    assert sum(sum(dataset) for dataset in seen["custom"]) >= 5
    assert all(width <= 0 for width in seen["overflow"].values()), seen["overflow"]
    assert seen["unlabelled"] == []  # every field of every page has its label
    assert seen["errors"] == []
    assert "served by openai/gpt-4o-mini" in seen["playground"]
    assert len(seen["playground"].split("\n")[0]) > 10
    assert seen["after_signout"] is None

    keys = (await http.get(f"{M}/api-keys")).json()["data"]
    assert "made in the browser" not in {k["name"] for k in keys}  # revoked, then deleted
    async with httpx.AsyncClient(base_url=gateway.url) as other:
        refused = await other.get("/v1/models", headers=bearer(seen["secret"]))
    assert refused.status_code == 401
    assert (await http.get(f"{M}/routing-rules/{rule_id}")).status_code == 404
    audit = (await http.get(f"{M}/audit-log?type=routing_rule.disabled")).json()["events"]
    assert [e["target"]["id"] for e in audit] == [rule_id]


async def test_console_files_are_served_without_a_key(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        page = await anonymous.get("/console")
        script = await anonymous.get("/console/console.js")
        module = await anonymous.get("/console/js/api.js")
        chart = await anonymous.get("/console/vendor/chartjs/chart.umd.min.js")
        licence = await anonymous.get("/console/vendor/chartjs/LICENSE.md")
        escape = await anonymous.get("/console/..%2F..%2Fplatform%2Fconfig.py")
        data = await anonymous.get(f"{M}/console/usage")
    assert page.status_code == 200 and "sessionStorage" not in page.text
    assert script.status_code == 200 and "import" in script.text
    assert "javascript" in module.headers["content-type"]  # a module needs a script type
    assert "sessionStorage" in module.text
    assert chart.status_code == 200
    assert "MIT" in licence.text
    assert escape.status_code == 404
    assert data.status_code == 401


async def test_usage_series_sums_real_requests(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await make_traffic(client, http)
    series = (await http.get(f"{M}/console/usage?hours=1&bucket=minute")).json()
    assert series["object"] == "usage_series"
    chat = [p for p in series["points"] if p["model"] == "gpt-4o-mini"]
    assert sum(p["requests"] for p in chat) == 2
    assert all(p["provider"] == "openai" and p["cost_usd"] > 0 for p in chat)
    bad = await http.get(f"{M}/console/usage?hours=2160&bucket=minute")
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "bucket"
    assert (await http.get(f"{M}/console/usage?hours=0")).status_code == 400
