"""The parts of a retrieval answer that embeddings and rerank share: headers and `service`."""

from __future__ import annotations

from typing import Any

from gateway.retrieval.serve import Answered
from gateway.retrieval.shapes import RetrievalService
from gateway.upstream.footprint_render import footprint_headers


def answer_headers(answered: Answered[Any]) -> dict[str, str]:
    """X-Request-ID, the model used (provider/model, as chat), the energy and carbon, and
    the key's rate-limit headers."""
    target = answered.target
    return (
        {
            "X-Request-ID": answered.facts.request_id,
            "X-Service-Model-Used": f"{target.provider_id}/{target.model_id}",
        }
        | footprint_headers(answered.accounting)
        | answered.limit_headers
    )


def service_object(answered: Answered[Any]) -> RetrievalService:
    """The spec's `service` object of embeddings and rerank answers."""
    return {
        "request_id": answered.facts.request_id,
        "provider": answered.target.provider_id,
        "latency_ms": answered.accounting.latency_ms,
        "cost": {"total": answered.accounting.cost.total},
    }
