"""The path embeddings and rerank share: plan, admit, call the engine (which accounts).

A request names one model and, optionally, explicit fallbacks (`service.fallbacks`); the
catalog's chain is not used, because vectors and scores are comparable only within one
model. Each target is checked against the request before anything is taken from the key's
limits; the upstream call is the engine's (`gateway.upstream.engine.call`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import attrs

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from gateway.retrieval.services import RetrievalServices
from gateway.upstream.accounting import Accounting
from gateway.upstream.engine import Called
from gateway.upstream.facts import RequestFacts, identified, new_facts
from gateway.upstream.options import ServiceOptions
from gateway.upstream.resolve import Target
from gateway.upstream.usage import unplanned
from providers.base import Provider
from providers.catalog import ModelInfo
from providers.types import Usage

T = TypeVar("T")
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
class Answered(Generic[T]):
    """A served retrieval request: its facts, what served it, what it cost, and the
    rate-limit headers of its key as of the answer."""

    facts: RequestFacts
    served: Called[T]
    limit_headers: dict[str, str]

    @property
    def target(self) -> Target:
        return self.served.target

    @property
    def accounting(self) -> Accounting:
        return self.served.accounting


def _model_named(body: Any) -> object:
    """The model a request body names, whatever its shape (for a refusal's record)."""
    return body.get("model") if isinstance(body, dict) else None


async def serve_retrieval(
    retrieval: RetrievalServices,
    principal: Principal,
    headers: Mapping[str, str],
    body: Any,
    *,
    endpoint: str,
    parse: Callable[[Any], P],
    capability: str,
    check: Callable[[P, ModelInfo | None], None],
    tokens: Callable[[P], int],
    operation: Callable[[Provider, Target, P], Awaitable[T]],
    usage_of: Callable[[P, T], Usage],
) -> tuple[P, Answered[T]]:
    """Serve one request body: `parse` checks it (a refusal is recorded), `tokens`
    estimates what it reads (the limits reserve it), `operation` is the upstream call,
    `usage_of` measures what the answer used. Raises `ApiError` for client mistakes and
    upstream failures, with the `X-Request-ID` of its usage record; cancellation closes
    the upstream call and propagates."""
    facts = new_facts(endpoint, principal, headers)
    with identified(facts):
        with retrieval.engine.usage.rejecting(facts, lambda: _model_named(body)):
            params = parse(body)
        answered = await _serve(
            retrieval,
            facts,
            params,
            capability=capability,
            check=check,
            tokens=tokens,
            operation=operation,
            usage_of=usage_of,
        )
    return params, answered


async def _serve(
    retrieval: RetrievalServices,
    facts: RequestFacts,
    params: P,
    *,
    capability: str,
    check: Callable[[P, ModelInfo | None], None],
    tokens: Callable[[P], int],
    operation: Callable[[Provider, Target, P], Awaitable[T]],
    usage_of: Callable[[P, T], Usage],
) -> Answered[T]:
    """Serve one validated request (see `serve_retrieval`)."""
    principal = facts.principal
    engine = retrieval.engine
    try:
        plan = engine.plan_named(
            principal,
            model=params.model,
            provider=params.provider,
            fallbacks=params.service.fallbacks,
            capability=capability,
            service=params.service,
            catalog_fallbacks=False,
        )
        for target in plan.targets:
            check(params, target.info)
    except ApiError as error:  # refused before any call (its model, its input): recorded
        engine.usage.refusal(facts, unplanned(params.model), error)
        raise
    with engine.usage.refusing(facts, plan.primary):
        hold = await retrieval.admission.admit(
            principal, params.service, prompt_tokens=tokens(params), max_tokens=0, plan=plan
        )

    async def one_call(adapter: Provider, target: Target) -> T:
        return await operation(adapter, target, params)

    with hold:
        served = await engine.call(
            facts,
            plan,
            one_call,
            hold=hold,
            timeout_s=retrieval.settings.upstream_timeout_s,
            meter=lambda value: usage_of(params, value),
        )
        return Answered(facts, served, hold.headers())
