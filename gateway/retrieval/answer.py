"""The parts of a retrieval answer that embeddings and rerank share: headers and `service`."""

from __future__ import annotations

from typing import Any

from gateway.accounting import Accounting
from gateway.chat.render import footprint_headers
from gateway.resolve import Target
from gateway.retrieval.upstream import Job


def base_headers(job: Job, target: Target, accounting: Accounting) -> dict[str, str]:
    """X-Request-ID, the model used (provider/model, as chat) and the energy and carbon."""
    return {
        "X-Request-ID": job.request_id,
        "X-Service-Model-Used": f"{target.provider_id}/{target.model_id}",
    } | footprint_headers(accounting)


def service_object(job: Job, target: Target, accounting: Accounting) -> dict[str, Any]:
    """The spec's `service` object of embeddings and rerank answers."""
    return {
        "request_id": job.request_id,
        "provider": target.provider_id,
        "latency_ms": accounting.latency_ms,
        "cost": {"total": accounting.cost.total},
    }
