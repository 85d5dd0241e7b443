"""What the scale-out tests share: making a limited key, firing many requests at once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import trio

from tests.gateway.conftest import ADMIN_KEY

KEYS = "/v1/management/api-keys"
CHAT_BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Hi"}],
    "max_tokens": 5,
}


async def create_key(base_url: str, rate_limits: dict[str, int]) -> tuple[str, str]:
    """A new prod key with these limits: (its id, its secret)."""
    async with httpx.AsyncClient(
        base_url=base_url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30
    ) as http:
        response = await http.post(
            KEYS, json={"name": "limited", "type": "prod", "rate_limits": rate_limits}
        )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body["id"], body["key"]


async def fire(urls: list[str], secret: str, count: int) -> Counter[tuple[int, str]]:
    """`count` chat requests sent at once, spread over `urls` in turn: how many answered
    each (status, error code) ("" for a success)."""
    outcomes: Counter[tuple[int, str]] = Counter()
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(
        headers={"authorization": f"Bearer {secret}"}, timeout=60, limits=limits
    ) as http:

        async def one(index: int) -> None:
            # A prompt of its own: a cached answer would come back at once.
            body = CHAT_BODY | {"messages": [{"role": "user", "content": f"Hi {index}"}]}
            url = urls[index % len(urls)]
            response = await http.post(url + "/v1/chat/completions", json=body)
            code = "" if response.status_code == 200 else response.json()["error"]["code"]
            outcomes[(response.status_code, code)] += 1

        async with trio.open_nursery() as nursery:
            for index in range(count):
                nursery.start_soon(one, index)
    return outcomes


async def fire_until_refused(
    urls: list[str], secret: str, count: int, refused: int
) -> Counter[tuple[int, str]]:
    """Like `fire` for answers that take long: stops (cancelling the requests still
    waiting) as soon as `refused` requests have been refused, else when all are done."""
    outcomes: Counter[tuple[int, str]] = Counter()
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with (
        httpx.AsyncClient(
            headers={"authorization": f"Bearer {secret}"}, timeout=120, limits=limits
        ) as http,
        trio.open_nursery() as nursery,
    ):

        async def one(index: int) -> None:
            body = CHAT_BODY | {"messages": [{"role": "user", "content": f"Hi {index}"}]}
            url = urls[index % len(urls)]
            response = await http.post(url + "/v1/chat/completions", json=body)
            code = "" if response.status_code == 200 else response.json()["error"]["code"]
            outcomes[(response.status_code, code)] += 1
            if sum(n for (status, _), n in outcomes.items() if status == 429) >= refused:
                nursery.cancel_scope.cancel()

        for index in range(count):
            nursery.start_soon(one, index)
    return outcomes
