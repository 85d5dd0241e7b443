"""A graceful shutdown lets the work in flight finish and loses no usage record."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

import openai
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from store import usage
from store.db import open_database
from tests.gateway.conftest import ADMIN_KEY

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


async def test_shutdown_flushes_every_usage_record(settings: Settings) -> None:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        running: RunningGateway = await nursery.start(
            partial(run_gateway, settings, env={}, shutdown_trigger=stop.wait)
        )
        async with openai.AsyncOpenAI(
            base_url=running.url + "/v1", api_key=ADMIN_KEY, max_retries=0
        ) as client:
            for i in range(7):
                await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"hi {i}"}]
                )
        stop.set()  # the server stops accepting, finishes, flushes and returns
    database = open_database(settings.data_dir)
    try:
        totals = database.run_sync(lambda d: usage.totals_since(d, since=EPOCH))
    finally:
        database.close()
    assert totals.requests == 7
