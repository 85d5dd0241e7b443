"""The durability tests share the in-process gateway's fixtures."""

from tests.gateway.conftest import gateway, http, settings

__all__ = ["gateway", "http", "settings"]
