"""The whole-gateway fixtures of tests/gateway, shared with the operator tests, and one
headless Chromium for every console test of a session (each signs in to its own gateway)."""

from collections.abc import Iterator

import pytest

from tests.gateway.conftest import ADMIN_KEY, client, gateway, http, settings
from tests.operator.browser import Browser, chromium, missing_browser

__all__ = ["ADMIN_KEY", "browser", "client", "gateway", "http", "settings"]


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    problem = missing_browser()
    if problem:
        pytest.fail(problem)
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as opened:
        yield opened
