"""Building chat trips and stream bodies by hand, as the chat service builds them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import attrs

from gateway.chat.body import ChatStreamBody
from gateway.chat.input import parse_chat_body
from gateway.chat.trip import Trip
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, from_provider_error
from gateway.upstream.accounting import Accounting, account
from gateway.upstream.facts import RequestFacts
from gateway.upstream.labels import RequestLabels
from gateway.upstream.resolve import Resolution, target_of
from providers.catalog import load_catalog
from providers.errors import ProviderError
from providers.types import ChatChunk, Usage
from store.keys import new_record


def make_trip(body: dict[str, Any]) -> Trip:
    """A streamed gpt-4o-mini trip for `body`, planned without routing."""
    info = load_catalog().model("gpt-4o-mini")
    assert info is not None
    key = new_record(
        "gw_prod_" + "x" * 40,
        workspace_id="default",
        name="t",
        kind="prod",
        permissions=("chat",),
        now=datetime.now(UTC),
    )
    facts = RequestFacts(
        request_id="00000000-0000-0000-0000-000000000001",
        created=0,
        started=0.0,
        principal=Principal(key),
        labels=RequestLabels(),
        endpoint="chat",
        task_type="chat",
    )
    return Trip(
        facts=facts,
        params=parse_chat_body(body),
        resolution=Resolution(target_of(info), (), "balanced", "test"),
    )


@attrs.define
class PricingTab:
    """The engine's side of a stream (`gateway.chat.body.Tab`), for a body built by hand:
    prices as the engine does and notes how the stream ended."""

    trip: Trip
    metered: Usage = attrs.field(factory=Usage)
    ends: list[str] = attrs.field(factory=list)

    def finished(self, usage: Usage) -> Accounting:
        self.ends.append("finished")
        catalog = load_catalog()
        return account(catalog, self.trip.target.info, usage, latency_ms=1, task_type=None)

    def failed(self, error: ProviderError) -> ApiError:
        self.ends.append("failed")
        return from_provider_error(error)


def measured(usage: Usage | None, chars: int) -> Usage:
    return usage or Usage(1, chars // 4)


@asynccontextmanager
async def owned_body(
    upstream: AbstractAsyncContextManager[AsyncIterator[ChatChunk]],
    build: Callable[[AsyncIterator[ChatChunk], ChatChunk], ChatStreamBody],
) -> AsyncIterator[AsyncIterator[bytes]]:
    """A body with the upstream stream it relays (its first chunk read before the body is
    built, as the race reads it), closed as the chat service's answering context closes
    them: the body first, then the upstream."""
    async with upstream as chunks:
        first = await anext(chunks)
        async with build(chunks, first).open() as frames:
            yield frames
