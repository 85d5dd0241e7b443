"""The worker that probes every active provider, so health is known without traffic.

Request outcomes already feed provider health (`gateway.upstream.chain.record_attempts`),
but a provider nobody calls would stay "unknown" and a broken one would be found by a
client. Every `health_probe_interval_s` each active provider of every workspace is asked
for its model list (free at every vendor) within `health_probe_deadline_s`; the outcome
and its latency go to `HealthBook.record_probe`. Probes of one round run together, at
most `PROBE_CONCURRENCY` at a time; a round that outlives the interval delays the next.
"""

from __future__ import annotations

import logging
import time

import attrs
import trio

from gateway.platform.config import Settings
from gateway.platform.errors import from_provider_error
from gateway.upstream.health import HealthBook
from gateway.upstream.registry import ProviderRegistry
from providers.base import Provider
from providers.errors import ProviderError, Unsupported

PROBE_CONCURRENCY = 8
logger = logging.getLogger(__name__)


@attrs.frozen
class Probes:
    """What probing needs: the providers to ask, where health is kept, the settings."""

    registry: ProviderRegistry
    health: HealthBook
    settings: Settings


async def run(
    probes: Probes, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Probe every interval until cancelled (a cancelled round closes its calls)."""
    interval = probes.settings.health_probe_interval_s
    task_status.started()
    if interval <= 0:
        return
    while True:
        await trio.sleep(interval)
        await probe_round(probes)


async def probe_round(probes: Probes) -> None:
    """Probe every active provider once; returns when all have answered or timed out."""
    limiter = trio.CapacityLimiter(PROBE_CONCURRENCY)
    async with trio.open_nursery() as nursery:
        for workspace_id, provider_id, adapter in probes.registry.active_adapters():
            nursery.start_soon(_probe, probes, limiter, workspace_id, provider_id, adapter)


async def _probe(
    probes: Probes,
    limiter: trio.CapacityLimiter,
    workspace_id: str,
    provider_id: str,
    adapter: Provider,
) -> None:
    deadline = probes.settings.health_probe_deadline_s
    async with limiter:
        started = time.perf_counter()
        error: str | None = None
        with trio.move_on_after(deadline) as scope:
            try:
                await adapter.list_models()
            except Unsupported:
                return  # nothing to ask this vendor; its requests still report health
            except ProviderError as exc:
                error = from_provider_error(exc).code
            except Exception:  # a fault of ours in one provider's call: said, never fatal
                logger.exception("health probe of %s (%s) failed", provider_id, workspace_id)
                error = "internal_error"
        if scope.cancelled_caught:
            error = "provider_timeout"
        latency_ms = (time.perf_counter() - started) * 1000
        probes.health.record_probe(
            workspace_id, provider_id, ok=error is None, latency_ms=latency_ms, error_type=error
        )
