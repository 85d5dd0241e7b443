"""Sealing the request log's bodies before they reach the disk: PII redacted, encrypted.

The usage writer hands each batch that holds clear bodies (`BodyCapture` text, captured
for the workspaces that keep bodies) to `BodySealer.seal` before writing it. Each body
is redacted by the PII detector (a JSON document, string by string; the detector runs in
its worker process, off the event loop) and encrypted with the store's credential
cipher (Fernet: AES-128-CBC and HMAC-SHA256, the key in `GATEWAY_SECRET_KEY` or the
data directory's `secret.key`). A body that cannot be sealed within the batch's budget,
or whose redaction fails, is dropped (the entry is written without it, and counted):
never written clear, and never holding up the usage records behind it for long.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import orjson
import trio

from store.secrets import CipherError, CredentialCipher
from store.usage import UsageRecord

logger = logging.getLogger(__name__)

# Per batch. The detector's first scan in a fresh worker process loads its models (some
# seconds, more on a loaded machine); the records wait in the writer's queue meanwhile.
SEAL_BUDGET_S = 30.0


@attrs.define(eq=False)
class BodySealer:
    """Seals the clear bodies of a batch (`redact`: a JSON document in, redacted out)."""

    cipher: CredentialCipher
    redact: Callable[[str], Awaitable[str]]
    budget_s: float = SEAL_BUDGET_S
    sealed: int = 0
    dropped: int = 0

    async def seal(self, batch: list[UsageRecord]) -> list[UsageRecord]:
        """`batch` with every clear body sealed or dropped (records keep their order).

        Cancellation: propagates; the writer keeps the batch and seals it again."""
        deadline = trio.current_time() + self.budget_s
        return [await self._one(record, deadline) for record in batch]

    async def _one(self, record: UsageRecord, deadline: float) -> UsageRecord:
        if record.body is None or record.body_sealed:
            return record
        redacted: str | None = None
        with trio.move_on_at(deadline):
            try:
                redacted = await self.redact(record.body)
            except Exception:
                logger.exception("request log: a body could not be redacted; dropped")
        if redacted is None:
            self.dropped += 1
            return record._replace(body=None)
        self.sealed += 1
        return record._replace(body=self.cipher.encrypt({"body": redacted}), body_sealed=True)


def opened(cipher: CredentialCipher, sealed: str) -> Any:
    """A sealed body read back: `{"request": ..., "response": ...}` (PII redacted); None
    when this gateway's key cannot open it (the key was changed)."""
    try:
        return orjson.loads(cipher.decrypt(sealed)["body"])
    except (CipherError, KeyError, orjson.JSONDecodeError):
        return None
