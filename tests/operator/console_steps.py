"""Steps the console's browser tests share: sign in, open a page, find rows, read the
browser's console. Each runs in the test's worker thread (`in_browser`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
import trio

from tests.gateway.org_world import ok
from tests.operator.browser import Browser
from tests.operator.conftest import ADMIN_KEY

M = "/v1/management"
PAGES = (
    "usage",
    "carbon",
    "traffic",
    "requests",
    "providers",
    "rules",
    "keys",
    "workspaces",
    "members",
    "accounts",
    "audit",
    "exports",
    "playground",
)


async def in_browser(work: Callable[..., Any], *args: Any) -> Any:
    """Run the blocking browser steps in a thread while the gateway serves on the loop."""
    return await trio.to_thread.run_sync(partial(work, *args))


async def account(http: httpx.AsyncClient, name: str, role: str) -> str:
    """The key of a new service account with `role`."""
    made = await ok(
        await http.post(f"{M}/service-accounts", json={"name": name, "role": role}), 201
    )
    key: str = made["api_key"]
    return key


def sign_in(browser: Browser, url: str, key: str = ADMIN_KEY, page: str = "usage") -> None:
    browser.driver.set_window_size(1400, 1000)
    browser.open(url + "/console")
    browser.type("#signin-key", key)
    browser.click("#signin-form button")
    browser.page_loaded(page)
    assert browser.script("return sessionStorage.getItem('gateway.console.key')") == key
    assert browser.script("return localStorage.length") == 0


def go(browser: Browser, url: str, page: str) -> None:
    browser.open(f"{url}/console#{page}")
    browser.page_loaded(page)


def rows(browser: Browser, table: str) -> list[str]:
    found = browser.driver.find_elements("css selector", f"#{table} tbody tr")
    return [row.text for row in found]


def row_with(browser: Browser, table: str, text: str) -> Any:
    return browser.until(
        lambda d: next(
            (r for r in d.find_elements("css selector", f"#{table} tbody tr") if text in r.text),
            False,
        )
    )


def click_in_row(browser: Browser, table: str, text: str, button: str) -> None:
    row_with(browser, table, text).find_element("css selector", button).click()


def text_once(browser: Browser, css: str, contains: str) -> str:
    """The text of `css` once it contains `contains`."""
    found: str = browser.until(
        lambda d: (text := browser.find(css).text) and contains in text and text
    )
    return found


def console_errors(browser: Browser, allowed_status: int | None = None) -> list[dict[str, Any]]:
    """The browser console's errors but the failed loads of `allowed_status` (the API's
    answers a test provokes on purpose)."""
    return [
        e
        for e in browser.console_errors()
        if allowed_status is None
        or e.get("source") != "network"
        or f"status of {allowed_status}" not in e["message"]
    ]


UNLABELLED = """
return [...document.querySelectorAll('input, select, textarea')]
  .filter((c) => c.type !== 'hidden' && c.labels.length === 0 && !c.getAttribute('aria-label'))
  .map((c) => c.id || c.name || c.outerHTML);
"""
