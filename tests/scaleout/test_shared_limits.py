"""Exact per-key limits shared through Redis by two gateways (one trio loop, one store).

The same proofs with real processes are in `test_processes.py`; these run in process so
that the limiter's behaviour is tested quickly and with its internals at hand.
"""

from __future__ import annotations

import pytest
import trio

from gateway.platform.config import Settings
from gateway.platform.server import RunningGateway, run_gateway
from tests.scaleout.helpers import create_key, fire


async def start(nursery: trio.Nursery, settings: Settings) -> RunningGateway:
    running: RunningGateway = await nursery.start(
        lambda task_status: run_gateway(settings, env={}, task_status=task_status)
    )
    return running


@pytest.fixture
async def pair(nursery: trio.Nursery, shared_settings: Settings) -> list[RunningGateway]:
    """Two gateways on two ports sharing one store and one Redis."""
    return [await start(nursery, shared_settings), await start(nursery, shared_settings)]


async def test_rpm_is_exact_across_two_gateways(pair: list[RunningGateway]) -> None:
    _, secret = await create_key(pair[0].url, {"rpm": 100})
    outcomes = await fire([g.url for g in pair], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "rate_limit_exceeded"): 200}


async def test_daily_limit_is_exact_across_two_gateways(pair: list[RunningGateway]) -> None:
    _, secret = await create_key(pair[0].url, {"daily_requests": 100})
    outcomes = await fire([g.url for g in pair], secret, 300)
    assert outcomes == {(200, ""): 100, (429, "daily_limit_exceeded"): 200}
