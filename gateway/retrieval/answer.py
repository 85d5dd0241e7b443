"""The parts of a retrieval answer that embeddings and rerank share: headers and `service`."""

from __future__ import annotations

from typing import Any

from gateway.retrieval.upstream import Job, Planned
from gateway.upstream.accounting import Accounting
from gateway.upstream.footprint_render import footprint_headers
from gateway.upstream.resolve import Target


def answer_headers(planned: Planned[Any]) -> dict[str, str]:
    """X-Request-ID, the model used (provider/model, as chat), the energy and carbon, and
    the key's rate-limit headers."""
    job, served = planned.job, planned.served
    target = served.target
    return (
        {
            "X-Request-ID": job.request_id,
            "X-Service-Model-Used": f"{target.provider_id}/{target.model_id}",
        }
        | footprint_headers(served.accounting)
        | planned.limit_headers
    )


def service_object(job: Job, target: Target, accounting: Accounting) -> dict[str, Any]:
    """The spec's `service` object of embeddings and rerank answers."""
    return {
        "request_id": job.request_id,
        "provider": target.provider_id,
        "latency_ms": accounting.latency_ms,
        "cost": {"total": accounting.cost.total},
    }
