"""The connection limits are settings (`GATEWAY_*`) and reach the server."""

from __future__ import annotations

from gateway.app.server import hypercorn_config
from gateway.platform.config import Settings, load_settings
from gateway.platform.connections import ConnectionLimits
from gateway.platform.listen import LISTEN_BACKLOG, affordable_connections


def test_the_limits_come_from_the_environment() -> None:
    settings = load_settings(
        env={
            "GATEWAY_HEADER_TIMEOUT_S": "7.5",
            "GATEWAY_MAX_HEADER_BYTES": "8192",
            "GATEWAY_MIN_UPLOAD_RATE_BYTES_S": "2000",
            "GATEWAY_UPLOAD_RATE_GRACE_S": "3",
            "GATEWAY_SEND_STALL_TIMEOUT_S": "30",
            "GATEWAY_MAX_CONNECTIONS": "100",
            "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "10",
        }
    )
    assert ConnectionLimits.of(settings) == ConnectionLimits(
        header_timeout_s=7.5,
        send_stall_timeout_s=30,
        max_connections=100,
        max_connections_per_address=10,
    )
    assert (settings.min_upload_rate_bytes_s, settings.upload_rate_grace_s) == (2000, 3)
    config = hypercorn_config(settings, "127.0.0.1", 0)
    assert config.h11_max_incomplete_size == 8192
    assert config.backlog == LISTEN_BACKLOG


def test_the_defaults_leave_long_lived_traffic_alone() -> None:
    settings = Settings()
    assert settings.header_timeout_s == 20 and settings.upload_rate_grace_s == 20
    assert settings.min_upload_rate_bytes_s == 500  # 4 kbit/s
    assert settings.max_connections_per_address == 0  # off: a proxy is one address


def test_the_automatic_cap_is_what_the_descriptors_afford() -> None:
    automatic = affordable_connections(ConnectionLimits(max_connections=0))
    assert automatic >= 1
    assert affordable_connections(ConnectionLimits(max_connections=5)) == min(5, automatic)
    assert affordable_connections(ConnectionLimits(max_connections=10**9)) == automatic
