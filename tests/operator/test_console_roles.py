"""Roles in the console, in headless Chromium: a viewer signs in, every page loads (no
broken page, nothing in the browser's console but the API's 403 answers), every form is
read-only with the reason, and the pages its role may not read say so with the API's own
message; a developer reads the configuration, may dry-run rules but change nothing, and
a change the API refuses anyway (a form enabled behind the console's back) shows the 403.
"""

from __future__ import annotations

from typing import Any

import httpx

from gateway.app.server import RunningGateway
from tests.gateway.org_world import ok
from tests.operator.browser import Browser
from tests.operator.console_steps import (
    PAGES,
    M,
    account,
    console_errors,
    go,
    in_browser,
    row_with,
    sign_in,
    text_once,
)

# What the role table lets a viewer read (docs/organizations.md): analytics, the request
# log and the workspaces list; the playground needs the key's `chat` permission, which it lacks.
VIEWER_READS = {"usage", "carbon", "traffic", "requests", "workspaces", "playground"}
FORMS = """
return [...document.querySelectorAll('fieldset[data-action], fieldset[data-permission]')]
  .map((f) => [f.closest('section').id, f.disabled,
               (f.querySelector(':scope > .readonly') || {}).textContent || '']);
"""
DISABLED = "return document.querySelector(arguments[0]).disabled"
ROW_BUTTONS = "return document.querySelectorAll('td .actions button, td select').length"


def viewer_tour(browser: Browser, url: str, key: str) -> dict[str, Any]:
    browser.console_errors()
    sign_in(browser, url, key)
    seen: dict[str, Any] = {"who": browser.find("#who").text, "pages": {}}
    for page in PAGES:
        go(browser, url, page)
        seen["pages"][page] = {
            "error": browser.script("return document.getElementById('page-error').textContent"),
            "forbidden": browser.script(
                "return document.getElementById('page-error').classList.contains('forbidden')"
            ),
            "row_buttons": browser.script(ROW_BUTTONS),
        }
        browser.screenshot(f"viewer-{page}")
    seen["forms"] = browser.script(FORMS)
    seen["errors"] = console_errors(browser, allowed_status=403)
    return seen


async def test_a_viewer_changes_nothing_and_sees_why(
    browser: Browser, gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    seen = await in_browser(
        viewer_tour, browser, gateway.url, await account(http, "auditor", "viewer")
    )
    assert seen["who"] == "service account auditor (viewer)"
    assert seen["errors"] == []  # no JavaScript error; the 403s are the API's answers
    for page, found in seen["pages"].items():
        if page in VIEWER_READS:
            assert found["error"] == "", (page, found)
        else:  # the API's 403, shown as such
            assert found["forbidden"], (page, found)
            assert found["error"].startswith("Not allowed: The role 'viewer' may not"), found
        assert found["row_buttons"] == 0, page
    assert "view configuration" in seen["pages"]["providers"]["error"]
    assert "view audit log" in seen["pages"]["audit"]["error"]
    assert "export data" in seen["pages"]["exports"]["error"]
    forms = seen["forms"]
    assert forms and all(disabled for _, disabled, _ in forms), forms
    for section, _, why in forms:
        if section == "page-playground":
            assert why == "Read-only: this key lacks the 'chat' permission."
        else:
            assert why.startswith("Read-only: your role (viewer) may not "), (section, why)
    reasons = {section: why for section, _, why in forms}
    assert reasons["page-providers"].endswith("may not configure providers.")
    assert reasons["page-members"].endswith("may not invite members.")


def developer_tour(browser: Browser, url: str, key: str) -> dict[str, Any]:
    browser.console_errors()
    sign_in(browser, url, key)
    seen: dict[str, Any] = {}
    go(browser, url, "keys")
    row_with(browser, "keys-table", "bootstrap-admin")
    seen["key_buttons"] = browser.script(ROW_BUTTONS)
    seen["key_form"] = browser.script(DISABLED, "#key-form fieldset")
    # A form enabled behind the console's back: the API refuses, and the page says why.
    browser.script("document.querySelector('#key-form fieldset').disabled = false")
    browser.type("#key-name", "not mine to make")
    browser.click("#key-form button[type=submit]")
    seen["refused"] = text_once(browser, "#page-error", "Not allowed")
    seen["refused_forbidden"] = browser.script(
        "return document.getElementById('page-error').classList.contains('forbidden')"
    )
    browser.screenshot("developer-keys-refused")
    go(browser, url, "rules")
    seen["rule_form"] = browser.script(DISABLED, "#rule-form fieldset")
    browser.click("#test-form button[type=submit]")
    seen["dry_run"] = text_once(browser, "#test-result", "Resolved model")
    go(browser, url, "providers")
    row_with(browser, "providers-table", "OpenAI")
    seen["provider_buttons"] = browser.script(ROW_BUTTONS)
    seen["errors"] = console_errors(browser, allowed_status=403)
    return seen


async def test_a_developer_reads_configuration_and_the_api_refusal_is_shown(
    browser: Browser, gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    key = await account(http, "builder", "developer")
    seen = await in_browser(developer_tour, browser, gateway.url, key)
    assert seen["key_buttons"] == 0
    assert seen["key_form"] is True
    assert seen["refused"] == "Not allowed: The role 'developer' may not create api keys."
    assert seen["refused_forbidden"] is True
    assert seen["rule_form"] is True
    assert "Resolved model" in seen["dry_run"]
    assert seen["provider_buttons"] == 0
    assert seen["errors"] == []
    keys = (await ok(await http.get(f"{M}/api-keys")))["data"]
    assert "not mine to make" not in {k["name"] for k in keys}
