"""The web console in Debian's headless Chromium: sign in, charts drawn from real requests,
a key created and revoked, a rule disabled, a streamed chat in the playground.

Screenshots of each page land in test-artifacts/console/.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from tests.operator.browser import Browser, chromium, missing_browser
from tests.operator.conftest import ADMIN_KEY

CHART_SUMS = (
    "return Chart.getChart(document.getElementById(arguments[0]))"
    ".data.datasets.map(d => d.data.reduce((a, b) => a + b, 0));"
)
CHART_LABELS = "return Chart.getChart(document.getElementById(arguments[0])).data.labels;"


async def make_traffic(client: openai.AsyncOpenAI, http: httpx.AsyncClient) -> str:
    """Real requests for the charts, and a routing rule to toggle; the rule's id."""
    for model in ("gpt-4o-mini", "gpt-4o-mini", "claude-haiku-4-5"):
        await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": f"Hello from the console test ({model})"}],
            extra_body={"service": {"cache": "skip"}},
        )
    await client.embeddings.create(model="text-embedding-3-small", input="console")
    rule = await http.post(
        "/v1/management/routing-rules",
        json={
            "name": "console rule",
            "priority": 5,
            "conditions": {"models": ["gpt-4o"]},
            "actions": {"route_to": "gpt-4o-mini"},
        },
    )
    assert rule.status_code == 201, rule.text
    rule_id: str = rule.json()["id"]
    return rule_id


def chart_total(browser: Browser, chart: str) -> float:
    sums: list[float] = browser.script(CHART_SUMS, chart)
    return sum(sums)


def sign_in(browser: Browser, url: str) -> None:
    browser.open(url + "/console")
    browser.type("#signin-key", ADMIN_KEY)
    browser.click("#signin-form button")
    browser.page_loaded("usage")
    stored = browser.script("return sessionStorage.getItem('gateway.console.key')")
    assert stored == ADMIN_KEY
    assert browser.script("return localStorage.length") == 0


def check_charts(browser: Browser, url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    browser.until(lambda d: chart_total(browser, "chart-requests") >= 4)
    seen["requests"] = chart_total(browser, "chart-requests")
    seen["tokens"] = chart_total(browser, "chart-tokens")
    seen["cost"] = chart_total(browser, "chart-cost")
    browser.screenshot("usage")
    browser.open(url + "/console#carbon")
    browser.page_loaded("carbon")
    seen["energy"] = chart_total(browser, "chart-energy")
    seen["carbon"] = chart_total(browser, "chart-carbon")
    browser.screenshot("carbon")
    browser.open(url + "/console#traffic")
    browser.page_loaded("traffic")
    seen["models"] = browser.script(CHART_LABELS, "chart-models")
    seen["providers"] = browser.script(CHART_LABELS, "chart-providers")
    browser.screenshot("traffic")
    browser.open(url + "/console#providers")
    browser.page_loaded("providers")
    seen["provider_rows"] = len(
        browser.driver.find_elements("css selector", "#providers-table tbody tr")
    )
    browser.screenshot("providers")
    return seen


def create_and_revoke_key(browser: Browser, url: str) -> str:
    browser.open(url + "/console#keys")
    browser.page_loaded("keys")
    browser.type("#key-name", "made in the browser")
    browser.click("#key-form button")
    secret: str = browser.find("#key-secret-value").text
    assert secret.startswith("gw_prod_")
    row = browser.until(
        lambda d: next(
            (
                r
                for r in d.find_elements("css selector", "#keys-table tbody tr")
                if "made in the browser" in r.text
            ),
            False,
        )
    )
    browser.screenshot("keys")
    row.find_element("css selector", "button[data-revoke]").click()
    browser.accept_confirm()
    browser.until(
        lambda d: any(
            "made in the browser" in r.text and "revoked" in r.text
            for r in d.find_elements("css selector", "#keys-table tbody tr")
        )
    )
    return secret


def disable_rule(browser: Browser, url: str, rule_id: str) -> None:
    browser.open(url + "/console#rules")
    browser.page_loaded("rules")
    browser.click(f"button[data-toggle='{rule_id}']")
    browser.until(lambda d: browser.find(f"button[data-toggle='{rule_id}']").text == "Enable")
    browser.screenshot("rules")


def run_playground(browser: Browser, url: str) -> str:
    browser.open(url + "/console#playground")
    browser.page_loaded("playground")
    browser.type("#play-prompt", "Tell me about streams")
    browser.click("#play-send")
    browser.until(lambda d: browser.find("#play-output").get_attribute("data-done") == "true")
    browser.screenshot("playground")
    text: str = browser.find("#play-output").text
    meta: str = browser.find("#play-meta").text
    return text + "\n" + meta


def scenario(url: str, rule_id: str, profile: Path) -> dict[str, Any]:
    with chromium(profile) as browser:
        sign_in(browser, url)
        seen = check_charts(browser, url)
        seen["secret"] = create_and_revoke_key(browser, url)
        disable_rule(browser, url, rule_id)
        seen["playground"] = run_playground(browser, url)
        browser.click("#signout")
        browser.find("#signin-key")
        seen["after_signout"] = browser.script(
            "return sessionStorage.getItem('gateway.console.key')"
        )
    return seen


async def test_console_in_a_real_browser(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    problem = missing_browser()
    if problem:
        pytest.fail(problem)
    rule_id = await make_traffic(client, http)
    seen = await trio.to_thread.run_sync(
        partial(scenario, gateway.url, rule_id, tmp_path / "chromium-profile")
    )
    assert seen["requests"] >= 4  # three chats and an embedding, at least
    assert seen["tokens"] > 0
    assert seen["cost"] > 0
    assert seen["energy"] > 0
    assert seen["carbon"] > 0
    assert {"gpt-4o-mini", "claude-haiku-4-5"} <= set(seen["models"])
    assert {"openai", "anthropic"} <= set(seen["providers"])
    listed = (await http.get("/v1/management/providers")).json()["providers"]
    assert seen["provider_rows"] == len(listed)  # every provider the management API lists
    assert "served by openai/gpt-4o-mini" in seen["playground"]
    assert len(seen["playground"].split("\n")[0]) > 10
    assert seen["after_signout"] is None

    keys = (await http.get("/v1/management/api-keys")).json()["data"]
    made = [k for k in keys if k["name"] == "made in the browser"]
    assert [k["status"] for k in made] == ["revoked"]
    async with httpx.AsyncClient(base_url=gateway.url) as other:
        refused = await other.get(
            "/v1/models", headers={"authorization": f"Bearer {seen['secret']}"}
        )
    assert refused.status_code == 401
    rule = (await http.get(f"/v1/management/routing-rules/{rule_id}")).json()
    assert rule["enabled"] is False


async def test_console_files_are_served_without_a_key(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        page = await anonymous.get("/console")
        script = await anonymous.get("/console/console.js")
        chart = await anonymous.get("/console/vendor/chartjs/chart.umd.min.js")
        licence = await anonymous.get("/console/vendor/chartjs/LICENSE.md")
        escape = await anonymous.get("/console/..%2F..%2Fplatform%2Fconfig.py")
        data = await anonymous.get("/v1/management/console/usage")
    assert page.status_code == 200 and "sessionStorage" not in page.text
    assert "sessionStorage" in script.text
    assert chart.status_code == 200
    assert "MIT" in licence.text
    assert escape.status_code == 404
    assert data.status_code == 401


async def test_usage_series_sums_real_requests(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    await make_traffic(client, http)
    series = (await http.get("/v1/management/console/usage?hours=1&bucket=minute")).json()
    assert series["object"] == "usage_series"
    chat = [p for p in series["points"] if p["model"] == "gpt-4o-mini"]
    assert sum(p["requests"] for p in chat) == 2
    assert all(p["provider"] == "openai" and p["cost_usd"] > 0 for p in chat)
    bad = await http.get("/v1/management/console/usage?hours=2160&bucket=minute")
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "bucket"
    assert (await http.get("/v1/management/console/usage?hours=0")).status_code == 400
