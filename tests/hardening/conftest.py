"""The hardening tests share the in-process gateway's fixtures."""

from tests.gateway.conftest import client, gateway, http, settings

__all__ = ["client", "gateway", "http", "settings"]
