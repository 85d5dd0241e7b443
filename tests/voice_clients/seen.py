"""What a voice client script saw, and waiting on it: shared by the scripts here (run by
the voice clients' interpreter, with this folder first on the path)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

SERVER: list[dict[str, Any]] = []  # every server event, as JSON
CLIENT: list[dict[str, Any]] = []  # every client event the framework sent


async def until(what: str, found: Callable[[], Any], limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while not found():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what}: {[e['type'] for e in SERVER][-12:]}")
        await asyncio.sleep(0.02)


def count(kind: str) -> int:
    return sum(e["type"] == kind for e in SERVER)


def completed_answers() -> int:
    """Responses that finished speaking (not the function calls, not the interrupted)."""
    return sum(
        e["type"] == "response.done"
        and e["response"]["status"] == "completed"
        and any(o["type"] == "message" for o in e["response"]["output"])
        for e in SERVER
    )
