"""The facts of one model request that every part of its answer and its usage record
report, whatever the endpoint family: built once, after authentication, never mutated."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import attrs

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.upstream.labels import RequestLabels


@attrs.frozen
class RequestFacts:
    """Who asked, when, under which labels, and at which endpoint.

    `endpoint` is the family's name in the usage log (`chat`, `embeddings`, `rerank`, ...):
    the daily and monthly limits and every report group by it. A family that learns more
    while planning adds it with `attrs.evolve`: `task_type` (what the footprint estimate
    reads) and `prompt_hash` (a chat request's cache key, kept in its usage record).
    """

    request_id: str
    created: int  # Unix seconds
    started: float  # perf counter at arrival
    principal: Principal
    labels: RequestLabels
    endpoint: str
    task_type: str | None = None
    prompt_hash: str | None = None

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)


def new_facts(endpoint: str, principal: Principal, headers: Mapping[str, str]) -> RequestFacts:
    return RequestFacts(
        request_id=str(uuid.uuid4()),
        created=int(time.time()),
        started=time.perf_counter(),
        principal=principal,
        labels=RequestLabels.from_headers(headers),
        endpoint=endpoint,
    )


@contextmanager
def identified(facts: RequestFacts) -> Iterator[None]:
    """An `ApiError` leaving the block answers with the request's `X-Request-ID`, as its
    success does: a client reporting a failure (the official clients read the header into
    the exception's `request_id`) quotes the id its usage record and the error pages know."""
    try:
        yield
    except ApiError as error:
        error.headers.setdefault("X-Request-ID", facts.request_id)
        raise
