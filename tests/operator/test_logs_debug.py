"""`log_request_bodies`: the debug setting that lets prompts into the access log."""

from __future__ import annotations

import io

import attrs
import openai
import pytest

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.operator.conftest import ADMIN_KEY
from tests.operator.test_logs import PROMPT, access, exercise, log_stream

__all__ = ["log_stream"]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, log_request_bodies=True)


async def test_the_debug_setting_logs_bodies(
    gateway: RunningGateway, client: openai.AsyncOpenAI, log_stream: io.StringIO
) -> None:
    request_id = await exercise(gateway, client)
    chat = next(e for e in access(log_stream) if e["request_id"] == request_id)
    assert PROMPT in chat["body"]
    assert ADMIN_KEY not in log_stream.getvalue()
