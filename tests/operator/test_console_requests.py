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
from tests.gateway.org_world import ok
from tests.operator.browser import Browser
from tests.operator.conftest import ADMIN_KEY
from tests.operator.console_steps import (
    M,
    account,
    click_in_row,
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


SECRET_WORD = "bioluminescent"
PROMPT = f"My {SECRET_WORD} email is jane.doe@example.com."
BODY = "return (document.querySelector('#log-detail pre.body') || {}).textContent || ''"


def keep_bodies(browser: Browser, url: str) -> str:
    """Edit the default workspace and tick its bodies switch; the table's word for it."""
    browser.console_errors()
    sign_in(browser, url)
    go(browser, url, "workspaces")
    click_in_row(browser, "workspaces-table", "Default", "button[data-edit]")
    assert browser.script("return document.getElementById('workspace-bodies').checked") is False
    browser.click("#workspace-bodies")
    browser.click("#workspace-submit")
    text_once(browser, "#workspace-result", "saved")
    row = str(row_with(browser, "workspaces-table", "Default").text)
    browser.click("#signout")
    return row


def read_body(browser: Browser, url: str, request_id: str, key: str, shot: str) -> dict[str, Any]:
    sign_in(browser, url, key)
    go(browser, url, "requests")
    browser.click(f"button[data-open='{request_id}']")
    text_once(browser, "#log-detail-title", request_id)
    seen = {
        "body": browser.script(BODY),
        "said": browser.find("#log-detail-body").text,
    }
    browser.script("document.getElementById('log-detail').scrollIntoView(false)")
    browser.screenshot(shot)
    seen["errors"] = console_errors(browser)
    browser.click("#signout")
    return seen


async def test_kept_bodies_are_switched_on_and_shown_redacted_to_admins_only(
    browser: Browser,
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
) -> None:
    row = await in_browser(keep_bodies, browser, gateway.url)
    assert "Default" in row and " kept" in row and "not kept" not in row
    workspace = await ok(await http.get(f"{M}/workspaces/default"))
    assert workspace["request_log_bodies"] is True
    await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": PROMPT}],
        extra_headers={"X-Request-ID": "with-body"},
    )
    await gateway.state.usage.flush()  # the writer seals (redacts, encrypts) the body
    url = gateway.url
    admin = await in_browser(read_body, browser, url, "with-body", ADMIN_KEY, "request-body")
    viewer_key = await account(http, "reader", "viewer")
    viewer = await in_browser(read_body, browser, url, "with-body", viewer_key, "viewer-body")
    assert admin["errors"] == [] and viewer["errors"] == []
    assert "[EMAIL]" in admin["body"] and SECRET_WORD in admin["body"]
    assert "jane.doe@example.com" not in admin["said"]
    assert viewer["body"] == "" and "Bodies kept: shown to owners and admins." in viewer["said"]
