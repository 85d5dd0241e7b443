"""The request log in the console, in headless Chromium: a request every candidate failed
is found among the failed ones, and its attempt timeline shows each provider tried, when
it started, how long it ran and why it failed; a fallback's timeline shows the failure and
the winner."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from selenium.webdriver.support.ui import Select

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.operator.browser import Browser
from tests.operator.console_steps import (
    console_errors,
    go,
    in_browser,
    row_with,
    rows,
    sign_in,
    text_once,
)

HELLO: Any = [{"role": "user", "content": "Hello"}]
ATTEMPTS = """
return [...document.querySelectorAll('#log-detail .attempt')].map((a) => [
  a.dataset.outcome, a.querySelector('.attempt-label').textContent,
  a.querySelector('.attempt-facts').textContent,
  parseFloat(a.querySelector('.bar').style.width)]);
"""


def find_and_open(browser: Browser, url: str, failed_id: str, fallback_id: str) -> dict[str, Any]:
    browser.console_errors()
    sign_in(browser, url)
    go(browser, url, "requests")
    row_with(browser, "log-table", "chat")
    seen: dict[str, Any] = {"all": rows(browser, "log-table")}
    Select(browser.find("#log-status")).select_by_value("error")
    browser.click("#log-form button[type=submit]")
    browser.until(lambda d: len(rows(browser, "log-table")) == 1)
    seen["failed_rows"] = rows(browser, "log-table")
    browser.click(f"button[data-open='{failed_id}']")
    seen["failed_title"] = text_once(browser, "#log-detail-title", failed_id)
    seen["failed_attempts"] = browser.script(ATTEMPTS)
    browser.script("document.getElementById('log-detail').scrollIntoView(false)")
    browser.screenshot("request-log")
    Select(browser.find("#log-status")).select_by_value("")
    browser.click("#log-form button[type=submit]")
    browser.click(f"button[data-open='{fallback_id}']")
    text_once(browser, "#log-detail-title", fallback_id)
    seen["fallback_attempts"] = browser.script(ATTEMPTS)
    seen["errors"] = console_errors(browser)
    return seen


async def test_a_failed_request_and_its_attempt_timeline(
    browser: Browser,
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
) -> None:
    sim = gateway.sim
    assert sim is not None
    sim.faults.add(Fault(model="*", status=500))
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, extra_headers={"X-Request-ID": "all-failed"}
        )
    assert failed.value.status_code == 502
    sim.faults.clear()
    sim.faults.add(Fault(model="gpt-4o-mini", status=500))
    await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, extra_headers={"X-Request-ID": "fell-back"}
    )
    sim.faults.clear()
    await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    seen = await in_browser(find_and_open, browser, gateway.url, "all-failed", "fell-back")
    assert seen["errors"] == []
    assert len(seen["all"]) == 3
    [failed_row] = seen["failed_rows"]
    assert "502" in failed_row and "provider_error" in failed_row
    attempts = seen["failed_attempts"]
    assert len(attempts) >= 2  # the model and its fallbacks, each failed
    assert attempts[0][1].startswith("openai/gpt-4o-mini")
    for outcome, _, facts, width in attempts:
        assert outcome == "failed" and "(provider_error)" in facts and "started at" in facts
        assert width > 0
    (first, second) = seen["fallback_attempts"]
    assert first[0] == "failed" and first[1].startswith("openai/gpt-4o-mini")
    assert second[0] == "won" and "won: started at" in second[2]
