"""The durability tests share the in-process gateway's settings fixture."""

from tests.gateway.conftest import settings

__all__ = ["settings"]
