"""Turning a status event or an alert change into logged, signed deliveries.

A status event fans out to the workspace's subscriptions that asked for its name; each
becomes a `pending` row in the delivery log (so its owner can follow it) and a
`DeliveryJob` carrying the decrypted secret, which lives only in memory. At start, the
deliveries a stop left `pending` become jobs again (`resumable`).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlite_utils

from gateway.kernels.webhooks.hub import DeliveryJob, StatusEvent
from store import webhooks as webhook_store
from store.secrets import CipherError
from store.webhooks import DeliveryRecord

if TYPE_CHECKING:
    from gateway.kernels.webhooks.services import Webhooks

logger = logging.getLogger(__name__)


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def pending(
    *,
    workspace_id: str,
    source_kind: str,
    source_id: str,
    url: str,
    event: str,
    body: bytes,
    now: datetime,
) -> DeliveryRecord:
    return DeliveryRecord(
        id=webhook_store.new_delivery_id(),
        workspace_id=workspace_id,
        source_kind=source_kind,
        source_id=source_id,
        event=event,
        url=url,
        payload=body.decode("utf-8"),
        status="pending",
        attempts=0,
        last_status_code=None,
        last_error=None,
        created_at=now,
        updated_at=now,
        delivered_at=None,
    )


async def fan_out(webhooks: Webhooks, event: StatusEvent, now: datetime) -> list[DeliveryJob]:
    """The deliveries of one status event, logged as pending before they are returned."""
    hooks = await webhooks.db.run(lambda d: webhook_store.list_webhooks(d, event.workspace_id))
    body = encode(event.payload)
    records: list[DeliveryRecord] = []
    jobs: list[DeliveryJob] = []
    for hook in hooks:
        if event.event not in hook.events:
            continue
        record = pending(
            workspace_id=event.workspace_id,
            source_kind="status_webhook",
            source_id=hook.id,
            url=hook.url,
            event=event.event,
            body=body,
            now=now,
        )
        try:
            secret = webhooks.cipher.decrypt(hook.encrypted_secret)["secret"]
        except CipherError:
            # The master key changed: the subscription must be created again.
            logger.error("status webhook %s: secret unreadable, not delivered", hook.id)
            continue
        records.append(record)
        jobs.append(DeliveryJob(record.id, hook.url, secret, event.event, body))
    if records:
        await webhooks.db.run(lambda d: [webhook_store.insert_delivery(d, r) for r in records])
    return jobs


async def alert_delivery(
    webhooks: Webhooks,
    *,
    workspace_id: str,
    alert_id: str,
    url: str,
    encrypted_secret: str,
    event: str,
    payload: dict[str, Any],
    now: datetime,
) -> None:
    """Log and queue an alert's webhook notification; a full queue marks it dropped."""
    body = encode(payload)
    record = pending(
        workspace_id=workspace_id,
        source_kind="alert",
        source_id=alert_id,
        url=url,
        event=event,
        body=body,
        now=now,
    )
    await webhooks.db.run(lambda d: webhook_store.insert_delivery(d, record))
    try:
        secret = webhooks.cipher.decrypt(encrypted_secret)["secret"]
    except CipherError:
        why = "signing secret unreadable (the master key changed)"
        await webhooks.db.run(lambda d: webhook_store.mark(d, record.id, "failed", why, now))
        return
    if not webhooks.hub.submit(DeliveryJob(record.id, url, secret, event, body)):
        await webhooks.db.run(
            lambda d: webhook_store.mark(d, record.id, "dropped", "queue full", now)
        )


async def resumable(webhooks: Webhooks, now: datetime) -> list[DeliveryJob]:
    """The `pending` deliveries of the log as jobs to make again, with their attempts and
    the time already spent in the retry window; those that cannot be made any more (their
    window ended while the gateway was stopped, their subscription or alert is gone, their
    secret is unreadable) are marked `failed` with the reason."""
    pending = await webhooks.db.run(webhook_store.pending_deliveries)
    window = webhooks.settings.webhook_retry_window_s
    jobs: list[DeliveryJob] = []
    failed: list[tuple[str, str]] = []
    for item in pending:
        record = item.record
        elapsed = max(0.0, (now - record.created_at).total_seconds())
        if item.encrypted_secret is None:
            failed.append((record.id, webhook_store.SOURCE_GONE))
            continue
        if elapsed >= window:
            failed.append((record.id, "retry window ended while the gateway was stopped"))
            continue
        try:
            secret = webhooks.cipher.decrypt(item.encrypted_secret)["secret"]
        except CipherError:
            failed.append((record.id, "signing secret unreadable (the master key changed)"))
            continue
        body = record.payload.encode("utf-8")
        jobs.append(
            DeliveryJob(
                record.id,
                record.url,
                secret,
                record.event,
                body,
                attempts=record.attempts,
                elapsed_s=elapsed,
            )
        )
    if failed:
        await webhooks.db.run(lambda d: _mark_failed(d, failed, now))
    return jobs


def _mark_failed(db: sqlite_utils.Database, failed: list[tuple[str, str]], now: datetime) -> None:
    for delivery_id, reason in failed:
        webhook_store.mark(db, delivery_id, "failed", reason, now)
