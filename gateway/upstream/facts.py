"""The facts of one model request that every part of its answer and its usage record
report, whatever the endpoint family: built once, after authentication, never mutated."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import attrs

from gateway.platform.auth import Principal
from gateway.platform.context import current_request_id
from gateway.platform.errors import ApiError
from gateway.upstream.bodies import BodyCapture
from gateway.upstream.labels import RequestLabels
from store.request_log import LoggedAttempt


@attrs.frozen
class RaceOrigin:
    """When a race started, on the trio clock and in milliseconds after the request
    arrived: what turns the race's trio times into offsets within the request."""

    trio_time: float
    elapsed_ms: float

    def offset_ms(self, moment: float) -> float:
        return round(self.elapsed_ms + (moment - self.trio_time) * 1000, 3)


@attrs.define
class CallTrail:
    """What happened to one model call while it ran, for its usage record and the
    request log: written by the family (the model the client named) and by the engine
    (the race's attempts, the time to the first result), read once when the record is
    built. The one mutable part of the facts."""

    model_requested: str | None = None
    attempts: tuple[LoggedAttempt, ...] = ()
    ttft_ms: float | None = None
    race_origin: RaceOrigin | None = None
    body: BodyCapture | None = None  # only for a workspace that keeps bodies


@attrs.frozen
class RequestFacts:
    """Who asked, when, under which labels, and at which endpoint.

    `endpoint` is the family's name in the usage log (`chat`, `embeddings`, `rerank`, ...):
    the daily and monthly limits and every report group by it. A family that learns more
    while planning adds it with `planned`: `task_type` (what the footprint estimate
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
    trail: CallTrail = attrs.field(factory=CallTrail, eq=False)

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)

    def planned(self, task_type: str | None, prompt_hash: str | None) -> RequestFacts:
        """These facts with what planning learnt, in one construction: `attrs.evolve`
        walks every field by introspection (~4 us), and a chat request paid it twice."""
        return RequestFacts(
            request_id=self.request_id,
            created=self.created,
            started=self.started,
            principal=self.principal,
            labels=self.labels,
            endpoint=self.endpoint,
            task_type=task_type,
            prompt_hash=prompt_hash,
            trail=self.trail,
        )

    def asked_for(self, model: object) -> None:
        """Note the model the client named (a string), for the request log."""
        if isinstance(model, str) and model:
            self.trail.model_requested = model


def new_facts(endpoint: str, principal: Principal, headers: Mapping[str, str]) -> RequestFacts:
    """The facts of a model call of the request running in this task: its id is the
    request's (`X-Request-ID`, the client's own when valid), so every usage record of one
    request (a pipeline's stages) shares it."""
    return RequestFacts(
        request_id=current_request_id(),
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
