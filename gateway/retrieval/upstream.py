"""One retrieval call upstream: which targets, under which deadline, and what gets recorded.

Shared by embeddings and rerank, which differ only in the operation they call and in how
they count what it cost. A request names one model and, optionally, explicit fallbacks
(`service.fallbacks`); there is no `auto`, because vectors and scores are comparable only
within one model. Every upstream attempt feeds provider health; every request that reached
the point of calling upstream leaves exactly one usage record, whatever its outcome.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from typing import Generic, Protocol, TypeVar

import attrs
import trio

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, from_provider_error, invalid_request
from gateway.platform.state import AppState
from gateway.upstream.accounting import Accounting
from gateway.upstream.admission import admit
from gateway.upstream.chain import (
    Candidate,
    deadline_exceeded,
    record_attempts,
    retryable,
    usable,
    with_fallback_fields,
)
from gateway.upstream.labels import RequestLabels
from gateway.upstream.options import ServiceOptions
from gateway.upstream.resolve import Target, available_models, resolve_chat_target
from gateway.upstream.usage import submit_usage
from providers.base import Provider
from providers.catalog import Catalog, ModelInfo
from providers.errors import ProviderError
from streams.fallback import RaceFailed
from streams.race import from_call, race

T = TypeVar("T")
Operation = Callable[[Provider, Target], Awaitable[T]]
Accountant = Callable[[Target, T | None], Accounting]


P = TypeVar("P", bound="RetrievalParams")


class RetrievalParams(Protocol):
    """What every validated retrieval request names: its model, a forced provider, and
    the `service` extension (for its fallbacks)."""

    @property
    def model(self) -> str: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def service(self) -> ServiceOptions: ...


@attrs.frozen
class Job:
    """The facts of one retrieval request that its answer and its usage record report."""

    endpoint: str  # "embeddings" | "rerank": the usage log's endpoint column
    request_id: str
    created: int  # Unix seconds
    started: float  # perf counter at arrival
    principal: Principal
    labels: RequestLabels

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)


def new_job(endpoint: str, principal: Principal, headers: Mapping[str, str]) -> Job:
    return Job(
        endpoint=endpoint,
        request_id=str(uuid.uuid4()),
        created=int(time.time()),
        started=time.perf_counter(),
        principal=principal,
        labels=RequestLabels.from_headers(headers),
    )


@attrs.frozen
class Served(Generic[T]):
    target: Target
    result: T
    accounting: Accounting


# -- targets -------------------------------------------------------------------------------


def resolve_targets(
    state: AppState,
    principal: Principal,
    *,
    model: str,
    provider: str | None,
    fallbacks: Sequence[str],
    capability: str,
) -> tuple[Target, ...]:
    """The requested target, then each fallback once; 4xx when one is unusable."""
    catalog, active = state.catalog, state.registry.active_ids(principal.workspace_id)
    targets = [_resolve(catalog, active, model, provider, capability)]
    for name in fallbacks:
        target = _fallback(catalog, active, name, capability)
        if target not in targets:
            targets.append(target)
    for target in targets:
        principal.require_model(target.model_id)
    return tuple(targets)


def _resolve(
    catalog: Catalog, active: Set[str], model: str, provider: str | None, capability: str
) -> Target:
    resolution = resolve_chat_target(
        catalog, active, model=model, provider=provider, mode="balanced", capability=capability
    )
    info = resolution.target.info
    if info is not None and capability not in info.capabilities:  # a forced provider skips this
        raise invalid_request(
            f"The model '{info.id}' does not support {capability}.", param="model", value=model
        )
    return resolution.target


def _fallback(catalog: Catalog, active: Set[str], name: str, capability: str) -> Target:
    """A fallback resolved like the model itself; its faults name `service.fallbacks`."""
    try:
        return _resolve(catalog, active, name, None, capability)
    except ApiError as exc:
        raise invalid_request(
            f"'service.fallbacks' names '{name}': {exc.message}",
            param="service.fallbacks",
            value=name,
        ) from None


# -- one request, end to end ---------------------------------------------------------


@attrs.frozen
class Planned(Generic[T]):
    """A served retrieval request: its facts, what served it, and the rate-limit headers
    of its key as of the answer."""

    job: Job
    served: Served[T]
    limit_headers: dict[str, str]


async def serve_planned(
    state: AppState,
    principal: Principal,
    headers: Mapping[str, str],
    params: P,
    *,
    endpoint: str,
    capability: str,
    check: Callable[[P, ModelInfo | None], None],
    tokens: Callable[[P], int],
    operation: Callable[[Provider, Target, P], Awaitable[T]],
    accountant: Callable[[AppState, Job, Target, P, T | None], Accounting],
) -> Planned[T]:
    """Resolve the targets of a validated request (checking each against its model),
    take the request's share of the key's limits (`tokens` estimates what it reads), then
    race them: the shared path of embeddings and rerank."""
    targets = resolve_targets(
        state,
        principal,
        model=params.model,
        provider=params.provider,
        fallbacks=params.service.fallbacks,
        capability=capability,
    )
    for target in targets:
        check(params, target.info)
    hold = await admit(
        state, principal.key, params.service, prompt_tokens=tokens(params), max_tokens=0
    )
    job = new_job(endpoint, principal, headers)

    async def call(adapter: Provider, target: Target) -> T:
        return await operation(adapter, target, params)

    def account(target: Target, result: T | None) -> Accounting:
        return accountant(state, job, target, params, result)

    with hold:
        served = await call_upstream(state, job, targets, call, account)
        hold.settle(served.accounting.usage.total_tokens)
        return Planned(job, served, hold.headers())


# -- the call ------------------------------------------------------------------------------


async def call_upstream(
    state: AppState,
    job: Job,
    targets: Sequence[Target],
    operation: Operation[T],
    account: Accountant[T],
) -> Served[T]:
    """Race the targets in order (`streams.race`, as chat does) until one answers; raise
    the mapped `ApiError` otherwise.

    A retryable failure (timeout, 5xx, overload) moves to the next target; any other stops.
    Each attempt has the gateway's upstream deadline. On cancellation (the client went away)
    the race closes every upstream request, a 499 usage record is written and `Cancelled`
    propagates.
    """
    workspace = job.principal.workspace_id
    chain = usable(
        targets,
        lambda pid: state.registry.adapter(workspace, pid),
        state.breakers,
        workspace,
        trio.current_time(),
    )
    if not chain:
        error = ApiError(
            503,
            "provider_unavailable",
            "Every provider that could serve this request is failing; try again shortly.",
            type="provider_error",
            provider=targets[0].provider_id,
            status_url="/v1/status",
            retry_after=30,
        )
        _log(state, job, targets[0], account(targets[0], None), error.status, error.code)
        raise error
    timeout = state.settings.upstream_timeout_s

    async def call(candidate: Candidate) -> T:
        try:
            with trio.fail_after(timeout):
                return await operation(candidate.adapter, candidate.target)
        except trio.TooSlowError:
            raise deadline_exceeded(candidate.target.provider_id, timeout) from None

    contest = race(chain, from_call(call), is_retryable=retryable(()))
    try:
        async with contest as winner:
            result: T = winner.value
    except RaceFailed as failed:
        record_attempts(state, workspace, failed.attempts)
        error = _race_error(state, job, failed)
        _log(state, job, targets[0], account(targets[0], None), error.status, error.code)
        raise error from None
    except trio.Cancelled:
        _log(state, job, targets[0], account(targets[0], None), 499, "client_disconnected")
        raise
    record_attempts(state, workspace, winner.attempts)
    served = Served(winner.candidate.target, result, account(winner.candidate.target, result))
    _log(state, job, served.target, served.accounting, 200, None)
    return served


def _race_error(state: AppState, job: Job, failed: RaceFailed) -> ApiError:
    error = failed.error
    if not isinstance(error, ProviderError):
        raise error
    return with_fallback_fields(_mapped(state, job, error), failed)


def _mapped(state: AppState, job: Job, exc: ProviderError) -> ApiError:
    capability = "rerank" if job.endpoint == "rerank" else "embeddings"
    active = state.registry.active_ids(job.principal.workspace_id)
    return from_provider_error(
        exc, available_models=available_models(state.catalog, active, capability)
    )


# -- records -------------------------------------------------------------------------------


def _log(
    state: AppState,
    job: Job,
    target: Target,
    accounting: Accounting,
    status: int,
    error_code: str | None,
) -> None:
    submit_usage(
        state,
        request_id=job.request_id,
        principal=job.principal,
        created=job.created,
        labels=job.labels,
        target=target,
        endpoint=job.endpoint,
        accounting=accounting,
        status=status,
        error_code=error_code,
    )
