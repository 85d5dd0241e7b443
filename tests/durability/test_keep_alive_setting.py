"""`keep_alive_timeout_s` (GATEWAY_KEEP_ALIVE_TIMEOUT_S) reaches Hypercorn: it bounds how
long a connection the client closed after a streamed answer keeps its task and socket."""

from __future__ import annotations

from gateway.app.server import hypercorn_config
from gateway.platform.config import Settings, load_settings


def test_the_keep_alive_timeout_is_the_settings() -> None:
    assert hypercorn_config(Settings(), "127.0.0.1", 0).keep_alive_timeout == 75.0
    settings = load_settings(env={"GATEWAY_KEEP_ALIVE_TIMEOUT_S": "2.5"})
    assert settings.keep_alive_timeout_s == 2.5
    assert hypercorn_config(settings, "127.0.0.1", 0).keep_alive_timeout == 2.5
