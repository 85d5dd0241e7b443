"""The whole-gateway fixtures of tests/gateway, shared with the operator tests."""

from tests.gateway.conftest import ADMIN_KEY, client, gateway, http, settings

__all__ = ["ADMIN_KEY", "client", "gateway", "http", "settings"]
