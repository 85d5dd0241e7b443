"""Building chat trips and stream bodies by hand, as the chat service builds them."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any

from gateway.chat.body import ChatStreamBody
from gateway.chat.input import parse_chat_body
from gateway.chat.trip import Trip
from gateway.platform.auth import Principal
from gateway.upstream.facts import RequestFacts
from gateway.upstream.labels import RequestLabels
from gateway.upstream.resolve import Resolution, target_of
from providers.catalog import load_catalog
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
    )
    return Trip(
        facts=facts,
        params=parse_chat_body(body),
        resolution=Resolution(target_of(info), (), "balanced", "test"),
        task_type="chat",
    )


class OwnedBody:
    """A body with the upstream stream it relays, closed as the chat service's answering
    context closes them: the body first, then the upstream (whoever opened it)."""

    def __init__(self, body: ChatStreamBody, upstream: AbstractAsyncContextManager[Any]) -> None:
        self.body = body
        self.upstream = upstream

    async def __aenter__(self) -> OwnedBody:
        await self.body.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self.body.__aexit__(*exc_info)
        finally:
            await self.upstream.__aexit__(None, None, None)

    def __aiter__(self) -> ChatStreamBody:
        return self.body
