"""Debian's headless Chromium driven through chromedriver (selenium), for the console tests.

Selenium blocks, so the tests run their browser steps in a worker thread
(`trio.to_thread.run_sync`) while the gateway under test keeps serving on the trio loop.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
WAIT_S = 20
POLL_S = 0.05  # selenium's default half second, paid by every wait that looks twice


def missing_browser() -> str | None:
    for binary in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(binary) is None:
            return f"{binary} is missing: run `make test` (it installs chromium, chromium-driver)"
    return None


@contextmanager
def chromium(profile: Path) -> Iterator[Browser]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # The browser's console (JavaScript errors, failed loads) for `Browser.console_errors`.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield Browser(driver)
    finally:
        driver.quit()


class Browser:
    """A few verbs over a WebDriver, each waiting (bounded) for what it needs."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver

    def open(self, url: str) -> None:
        self.driver.get(url)

    def find(self, css: str) -> WebElement:
        return self.until(lambda d: _visible(d, css))

    def type(self, css: str, text: str) -> None:
        element = self.find(css)
        element.clear()
        element.send_keys(text)

    def click(self, css: str) -> None:
        """Click `css` once it is visible; a table redrawn between finding the element and
        clicking it makes it stale, and it is found again."""

        def clicked(driver: webdriver.Chrome) -> bool:
            found = _visible(driver, css)
            if found:
                found.click()
            return bool(found)

        self.until(clicked)

    def until(self, check: Callable[[webdriver.Chrome], Any]) -> Any:
        # Tables are redrawn after each change: an element may go stale between looks.
        wait = WebDriverWait(
            self.driver,
            WAIT_S,
            poll_frequency=POLL_S,
            ignored_exceptions=(StaleElementReferenceException,),
        )
        return wait.until(check)

    def page_loaded(self, page: str) -> None:
        self.until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == page
        )

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def console_errors(self) -> list[dict[str, Any]]:
        """The browser console's errors since the last call (each read empties the log):
        JavaScript errors, unhandled rejections, and loads that failed."""
        entries: list[dict[str, Any]] = self.driver.get_log("browser")
        return [entry for entry in entries if entry["level"] == "SEVERE"]

    def width(self, pixels: int) -> None:
        """Resize the window so the page's viewport is `pixels` wide."""
        inner: int = self.script("return window.innerWidth")
        outer = self.driver.get_window_size()
        self.driver.set_window_size(outer["width"] - inner + pixels, outer["height"])

    def accept_confirm(self) -> None:
        self.until(lambda d: d.switch_to.alert).accept()

    def screenshot(self, name: str) -> Path:
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTEFACTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path


def _visible(driver: webdriver.Chrome, css: str) -> WebElement | bool:
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0] if found and found[0].is_displayed() else False
