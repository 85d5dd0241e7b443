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
from typing import Generic, TypeVar

import attrs
import trio

from gateway.accounting import Accounting
from gateway.auth import Principal
from gateway.errors import ApiError, from_provider_error, invalid_request
from gateway.labels import RequestLabels
from gateway.resolve import Target, available_models, resolve_chat_target
from gateway.state import AppState
from gateway.usage_log import submit_usage
from providers.base import Provider
from providers.catalog import Catalog
from providers.errors import ProviderError, UpstreamTimeout

T = TypeVar("T")
Operation = Callable[[Provider, Target], Awaitable[T]]
Accountant = Callable[[Target, T | None], Accounting]

_CLIENT_FAULTS = (400, 403, 404)  # the provider answered; the request was wrong


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


@attrs.frozen
class _Failure:
    error: ApiError
    retryable: bool


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


# -- the call ------------------------------------------------------------------------------


async def call_upstream(
    state: AppState,
    job: Job,
    targets: Sequence[Target],
    operation: Operation[T],
    account: Accountant[T],
) -> Served[T]:
    """Try the targets in order until one answers; raise the mapped `ApiError` otherwise.

    A retryable failure (timeout, 5xx, overload) moves to the next target; any other stops.
    Each attempt has the gateway's upstream deadline. On cancellation (the client went away)
    the upstream request is closed by the cancellation itself, a 499 usage record is written
    and `Cancelled` propagates.
    """
    failures: list[_Failure] = []
    for target in targets:
        try:
            outcome = await _attempt(state, job, target, operation)
        except trio.Cancelled:
            _log(state, job, target, account(target, None), 499, "client_disconnected")
            raise
        if not isinstance(outcome, _Failure):
            served = Served(target, outcome, account(target, outcome))
            _log(state, job, target, served.accounting, 200, None)
            return served
        failures.append(outcome)
        if not outcome.retryable:
            break
    error = _final_error(failures, targets)
    _log(state, job, targets[0], account(targets[0], None), error.status, error.code)
    raise error


async def _attempt(
    state: AppState, job: Job, target: Target, operation: Operation[T]
) -> T | _Failure:
    adapter = state.registry.adapter(job.principal.workspace_id, target.provider_id)
    if adapter is None:  # resolved against the same registry, so only a race gets here
        error = ApiError(503, "provider_unavailable", "The provider was just disabled.")
        return _Failure(error, retryable=True)
    timeout = state.settings.upstream_timeout_s
    started = time.perf_counter()
    try:
        with trio.fail_after(timeout):
            result = await operation(adapter, target)
    except trio.TooSlowError:
        failure = _Failure(_timeout(target, timeout), retryable=True)
    except ProviderError as exc:
        failure = _Failure(_mapped(state, job, exc), retryable=exc.retryable)
    else:
        _health(state, job, target, (time.perf_counter() - started) * 1000, None)
        return result
    _health(state, job, target, (time.perf_counter() - started) * 1000, failure.error)
    return failure


def _timeout(target: Target, seconds: float) -> ApiError:
    return from_provider_error(
        UpstreamTimeout(
            target.provider_id,
            f"The provider did not answer within {seconds:g} s.",
            timeout_ms=int(seconds * 1000),
        )
    )


def _mapped(state: AppState, job: Job, exc: ProviderError) -> ApiError:
    capability = "rerank" if job.endpoint == "rerank" else "embeddings"
    active = state.registry.active_ids(job.principal.workspace_id)
    return from_provider_error(
        exc, available_models=available_models(state.catalog, active, capability)
    )


def _final_error(failures: Sequence[_Failure], targets: Sequence[Target]) -> ApiError:
    """The first target's error; when fallbacks were tried, the spec's fallback fields say
    which provider was tried last and how it ended."""
    first = failures[0].error
    if len(failures) == 1:
        return first
    return ApiError(
        first.status,
        first.code,
        first.message,
        type=first.type,
        headers=first.headers,
        **first.extra,
        fallback_attempted=True,
        fallback_provider=targets[len(failures) - 1].provider_id,
        fallback_result=failures[-1].error.code,
    )


# -- records -------------------------------------------------------------------------------


def _health(
    state: AppState, job: Job, target: Target, latency_ms: float, error: ApiError | None
) -> None:
    """Feed provider health with what the upstream did; a request it rightly refused
    (bad input, unknown model) says nothing about its health."""
    if error is not None and error.status in _CLIENT_FAULTS:
        return
    state.health.record(
        job.principal.workspace_id,
        target.provider_id,
        ok=error is None,
        latency_ms=latency_ms,
        error_type=error.code if error is not None else None,
    )


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
