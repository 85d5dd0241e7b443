"""Fixtures of the scale-out tests: a redis-server per test, gateway settings using it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.platform.config import Settings
from tests.gateway.conftest import gateway_settings
from tests.scaleout.redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def shared_settings(tmp_path: Path, redis_server: RedisServer) -> Settings:
    """Demo mode with an unpaced simulator and limits on Redis."""
    return gateway_settings(
        tmp_path,
        redis_url=redis_server.url,
        # Exactness, not speed, is tested here: a loaded machine must not turn a slow
        # answer into the unavailable policy.
        redis_timeout_s=10.0,
    )
