"""Configuring the gateway through the console's forms, in headless Chromium, checked
through the API afterwards: a workspace made with the keyboard and switched to; a
provider configured there (credentials set again, tested, disabled and enabled, deleted);
a routing rule created, dry-run and edited; a key with limits and budgets, its limits
edited, rotated with a grace period; members invited, one's role changed, one removed; a
service account; the audit log filtered and paged; an export followed and downloaded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from providers.sim.faults import MODEL_LIST
from tests.gateway.org_world import bearer, ok
from tests.operator.browser import Browser
from tests.operator.console_steps import (
    M,
    click_in_row,
    console_errors,
    go,
    in_browser,
    row_with,
    rows,
    sign_in,
    text_once,
)


def make_workspace_by_keyboard(browser: Browser, url: str) -> str:
    """Type the form and submit it with Enter, then switch the console to the workspace."""
    go(browser, url, "workspaces")
    browser.find("#workspace-name").send_keys("Team B", Keys.TAB, "the second team", Keys.ENTER)
    made = text_once(browser, "#workspace-result", "created")
    workspace_id = made.split("(")[-1].rstrip(").")
    browser.screenshot("workspaces")
    browser.type("#workspace-name", "Scratch")
    browser.click("#workspace-submit")
    click_in_row(browser, "workspaces-table", "Scratch", "button[data-edit]")
    browser.type("#workspace-description", "for a minute")
    browser.click("#workspace-submit")
    row_with(browser, "workspaces-table", "for a minute")
    click_in_row(browser, "workspaces-table", "Scratch", "button[data-delete]")
    browser.accept_confirm()
    text_once(browser, "#workspace-result", "deleted")
    click_in_row(browser, "workspaces-table", "Team B", "button[data-switch]")
    chosen = "return document.getElementById('workspace').value"
    browser.until(lambda d: browser.script(chosen) == workspace_id)
    browser.page_loaded("workspaces")
    return workspace_id


def configure_provider(browser: Browser, url: str, base_url: str, fail_test: Any) -> dict[str, str]:
    seen = {}
    go(browser, url, "providers")
    Select(browser.find("#provider-id")).select_by_value("openai")
    browser.type("#provider-key", "first-key")
    browser.type("#provider-base-url", base_url)
    browser.click("#provider-form button[type=submit]")
    seen["configured"] = text_once(browser, "#provider-result", "configured")
    row_with(browser, "providers-table", "yes,")
    browser.click("button[data-test='openai']")
    seen["tested"] = text_once(browser, "#provider-result", "test passed")
    fail_test()
    browser.click("button[data-test='openai']")
    seen["failed"] = text_once(browser, "#provider-result", "test failed")
    browser.click("button[data-credentials='openai']")
    browser.type("#credentials-key", "second-key")
    browser.click("#credentials-form button[type=submit]")
    seen["credentials"] = text_once(browser, "#provider-result", "credentials updated")
    browser.click("button[data-toggle='openai']")
    browser.until(lambda d: browser.find("button[data-toggle='openai']").text == "Enable")
    seen["disabled_row"] = row_with(browser, "providers-table", "OpenAI").text
    browser.click("button[data-toggle='openai']")
    browser.until(lambda d: browser.find("button[data-toggle='openai']").text == "Disable")
    browser.screenshot("providers")
    seen["page"] = browser.script("return document.body.innerText")
    return seen


def delete_provider(browser: Browser, url: str) -> str:
    go(browser, url, "providers")
    browser.click("button[data-delete='openai']")
    browser.accept_confirm()
    return text_once(browser, "#provider-result", "deleted")


def make_rule(browser: Browser, url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    go(browser, url, "rules")
    browser.type("#rule-name", "cheaper gpt-4o")
    browser.type("#rule-priority", "3")
    browser.type("#rule-models", "gpt-4o")
    browser.type("#rule-route-to", "gpt-4o-mini")
    browser.type("#rule-fallbacks", "claude-haiku-4-5")
    browser.type("#rule-retry-attempts", "2")
    browser.click("#rule-submit")
    seen["created"] = text_once(browser, "#rule-result", "created")
    browser.type("#test-model", "gpt-4o")
    browser.click("#test-form button[type=submit]")
    seen["dry_run"] = text_once(browser, "#test-result", "cheaper gpt-4o")
    browser.script("document.getElementById('test-output').scrollIntoView(false)")
    browser.screenshot("rules")
    click_in_row(browser, "rules-table", "cheaper gpt-4o", "button[data-edit]")
    browser.until(lambda d: browser.find("#rule-submit").text == "Save rule")
    browser.type("#rule-priority", "7")
    browser.type("#rule-route-to", "gpt-4.1-mini")  # Team B has OpenAI alone
    browser.type("#rule-fallbacks", "")
    browser.click("#rule-submit")
    seen["saved"] = text_once(browser, "#rule-result", "saved")
    seen["row"] = row_with(browser, "rules-table", "gpt-4.1-mini").text
    browser.click("#test-form button[type=submit]")
    seen["second_run"] = text_once(browser, "#test-result", "gpt-4.1-mini")
    return seen


def make_key(browser: Browser, url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    go(browser, url, "keys")
    browser.type("#key-name", "limited")
    for field, value in (
        ("rpm", "60"),
        ("tpm", "10000"),
        ("concurrent", "4"),
        ("daily_requests", "1000"),
        ("monthly_requests", "20000"),
    ):
        browser.type(f"#key-{field}", value)
    browser.click("#key-form button[type=submit]")
    seen["secret"] = browser.find("#key-secret code").text
    click_in_row(browser, "keys-table", "limited", "button[data-edit]")
    browser.type("#edit-rpm", "30")
    browser.type("#edit-tpm", "")
    browser.click("#edit-key-form button[type=submit]")
    row_with(browser, "keys-table", "30 rpm")
    click_in_row(browser, "keys-table", "limited", "button[data-rotate]")
    browser.type("#rotate-grace", "2")
    browser.click("#rotate-form button[type=submit]")
    seen["rotated"] = text_once(browser, "#key-secret .note", "old key works until")
    seen["new_secret"] = browser.find("#key-secret code").text
    browser.screenshot("keys-rotated")
    return seen


def invite_members(browser: Browser, url: str, workspace_id: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    go(browser, url, "members")
    for email, role in (("ada@example.com", "developer"), ("bob@example.com", "viewer")):
        browser.type("#invite-email", email)
        Select(browser.find("#invite-role")).select_by_visible_text(role)
        Select(browser.find("#invite-workspaces")).select_by_value(workspace_id)
        browser.click("#invite-form button[type=submit]")
        text_once(browser, "#invite-secret .note", email)
        row_with(browser, "members-table", email)
    seen["token"] = browser.find("#invite-secret code").text
    row = row_with(browser, "members-table", "ada@example.com")
    Select(row.find_element("css selector", "select[data-role]")).select_by_value("admin")
    browser.until(
        lambda d: (
            Select(
                row_with(browser, "members-table", "ada@example.com").find_element(
                    "css selector", "select[data-role]"
                )
            ).first_selected_option.text
            == "admin"
        )
    )
    click_in_row(browser, "members-table", "bob@example.com", "button[data-remove]")
    browser.accept_confirm()
    browser.until(lambda d: not any("bob@example.com" in r for r in rows(browser, "members-table")))
    browser.screenshot("members")
    go(browser, url, "accounts")
    browser.type("#account-name", "ci bot")
    Select(browser.find("#account-role")).select_by_visible_text("viewer")
    browser.click("#account-form button[type=submit]")
    seen["account_key"] = browser.find("#account-secret code").text
    row_with(browser, "accounts-table", "ci bot")
    browser.type("#account-name", "short-lived")
    browser.click("#account-form button[type=submit]")
    seen["short_lived_key"] = text_once(browser, "#account-secret .note", "short-lived") and (
        browser.find("#account-secret code").text
    )
    click_in_row(browser, "accounts-table", "short-lived", "button[data-delete]")
    browser.accept_confirm()
    browser.until(lambda d: not any("short-lived" in r for r in rows(browser, "accounts-table")))
    browser.screenshot("accounts")
    return seen


def read_audit_log(browser: Browser, url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    go(browser, url, "audit")
    Select(browser.find("#audit-limit")).select_by_visible_text("10")
    browser.click("#audit-form button[type=submit]")
    browser.until(
        lambda d: (
            browser.find("#audit-page").text == "Page 1" and len(rows(browser, "audit-table")) == 10
        )
    )
    seen["first"] = rows(browser, "audit-table")
    browser.screenshot("audit")
    browser.click("#audit-older")
    browser.until(lambda d: browser.find("#audit-page").text == "Page 2")
    seen["second"] = rows(browser, "audit-table")
    browser.click("#audit-newer")
    browser.until(lambda d: browser.find("#audit-page").text == "Page 1")
    seen["back"] = rows(browser, "audit-table")
    browser.type("#audit-type", "member.invited")
    browser.click("#audit-form button[type=submit]")
    browser.until(lambda d: all("member.invited" in r for r in rows(browser, "audit-table")))
    seen["invited"] = rows(browser, "audit-table")
    return seen


def export_and_download(browser: Browser, url: str) -> dict[str, Any]:
    go(browser, url, "exports")
    Select(browser.find("#export-format")).select_by_visible_text("json")
    browser.click("#export-form button[type=submit]")
    row = row_with(browser, "exports-table", "complete")  # followed until built
    browser.screenshot("exports")
    row.find_element("css selector", "button[data-download]").click()
    name: str = browser.until(
        lambda d: browser.find("#export-result").get_attribute("data-downloaded")
    )
    return {"name": name, "result": browser.find("#export-result").text}


def scenario(browser: Browser, url: str, base_url: str, fail_test: Any) -> dict[str, Any]:
    browser.console_errors()
    sign_in(browser, url)
    seen: dict[str, Any] = {"workspace": make_workspace_by_keyboard(browser, url)}
    seen["provider"] = configure_provider(browser, url, base_url, fail_test)
    seen["rule"] = make_rule(browser, url)
    seen["key"] = make_key(browser, url)
    seen["people"] = invite_members(browser, url, seen["workspace"])
    seen["audit"] = read_audit_log(browser, url)
    seen["export"] = export_and_download(browser, url)
    seen["deleted"] = delete_provider(browser, url)
    seen["errors"] = console_errors(browser)
    return seen


async def test_configuring_through_the_console(
    browser: Browser, gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    openai_settings = (await ok(await http.get(f"{M}/providers/openai")))["settings"]
    sim = gateway.sim
    assert sim is not None

    def fail_test() -> None:
        sim.faults.add(Fault(model=MODEL_LIST, status=500, remaining=1))

    seen = await in_browser(scenario, browser, gateway.url, openai_settings["base_url"], fail_test)
    assert seen["errors"] == []
    there = {"x-workspace-id": seen["workspace"]}

    workspace = await ok(await http.get(f"{M}/workspaces/{seen['workspace']}"))
    assert (workspace["name"], workspace["description"]) == ("Team B", "the second team")
    names = [w["name"] for w in (await ok(await http.get(f"{M}/workspaces")))["data"]]
    assert "Scratch" not in names  # made, edited, deleted

    provider = seen["provider"]
    assert "OpenAI configured (active)" in provider["configured"]
    assert "test passed" in provider["tested"] and "test failed" in provider["failed"]
    assert "disabled" in provider["disabled_row"]
    for secret in ("first-key", "second-key"):  # credentials are never shown back
        assert secret not in provider["page"]
    assert "configuration deleted" in seen["deleted"]
    listed = await ok(await http.get(f"{M}/providers/openai", headers=there))
    assert listed["configured"] is False
    assert (await ok(await http.get(f"{M}/providers/openai")))["configured"] is True
    audit = await ok(await http.get(f"{M}/audit-log?limit=100", headers=there))
    provider_events = [e["type"] for e in audit["events"] if e["type"].startswith("provider.")]
    assert provider_events == [
        "provider.deleted",
        "provider.enabled",
        "provider.disabled",
        "provider.credentials_updated",
        "provider.configured",
    ]

    rule_seen = seen["rule"]
    assert "Matched rule\ncheaper gpt-4o (priority 3)" in rule_seen["dry_run"]
    assert "Resolved model\ngpt-4o-mini" in rule_seen["dry_run"]
    assert "Resolved model\ngpt-4.1-mini" in rule_seen["second_run"]
    (rule,) = (await ok(await http.get(f"{M}/routing-rules", headers=there)))["rules"]
    assert (rule["name"], rule["priority"], rule["enabled"]) == ("cheaper gpt-4o", 7, True)
    assert rule["conditions"] == {"models": ["gpt-4o"]}
    assert rule["actions"]["route_to"] == "gpt-4.1-mini"
    assert "fallbacks" not in rule["actions"]
    assert rule["actions"]["retry"]["max_attempts"] == 2

    keys = (await ok(await http.get(f"{M}/api-keys", headers=there)))["data"]
    old, new = sorted((k for k in keys if k["name"] == "limited"), key=lambda k: k["created_at"])
    assert old["rate_limits"] == {
        "rpm": 30,
        "tpm": None,
        "daily_requests": 1000,
        "monthly_requests": 20000,
        "concurrent": 4,
    }
    assert new["rate_limits"] == old["rate_limits"]
    grace = datetime.fromisoformat(old["expires_at"]) - datetime.now(UTC)
    assert timedelta(hours=1, minutes=55) < grace <= timedelta(hours=2)
    assert seen["key"]["new_secret"].startswith("gw_prod_")
    assert seen["key"]["new_secret"] != seen["key"]["secret"]
    async with httpx.AsyncClient(base_url=gateway.url) as other:
        for secret in (seen["key"]["secret"], seen["key"]["new_secret"]):
            used = await other.get("/v1/models", headers={"authorization": f"Bearer {secret}"})
            assert used.status_code == 200  # the old key still works in its grace period

    members = (await ok(await http.get(f"{M}/members")))["data"]
    invited = [(m["email"], m["role"], m["workspaces"]) for m in members if "@ex" in m["email"]]
    assert invited == [("ada@example.com", "admin", [seen["workspace"]])]
    accounts = (await ok(await http.get(f"{M}/service-accounts")))["data"]
    assert [(a["name"], a["role"]) for a in accounts] == [("ci bot", "viewer")]
    me = await ok(await http.get(f"{M}/me", headers=bearer(seen["people"]["account_key"])))
    assert me["role"] == "viewer"
    gone = await http.get(f"{M}/me", headers=bearer(seen["people"]["short_lived_key"]))
    assert gone.status_code == 401  # its account deleted, the key with it

    pages = seen["audit"]
    assert len(pages["first"]) == 10 and pages["second"] and pages["back"] == pages["first"]
    assert not set(pages["first"]) & set(pages["second"])
    assert len(pages["invited"]) == 2

    assert seen["export"]["name"].endswith(".json")
    assert "Downloaded" in seen["export"]["result"]
