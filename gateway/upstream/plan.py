"""What a model request will call, in which order, and how the candidates are raced.

Every family plans the same way: the routed target first, then its fallbacks (explicit
ones from `service.fallbacks` or a routing rule, else the catalog's chain for the model),
each target once. The race policy (retries per candidate, which error codes also move
on, when to hedge) comes from the request's `service` options and the matching rule;
hedge delays are read from provider settings and health when the race starts
(`gateway.upstream.engine`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set

import attrs

from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, invalid_request
from gateway.upstream.chain import Candidate
from gateway.upstream.health import HealthBook
from gateway.upstream.options import ServiceOptions
from gateway.upstream.resolve import Target, resolve_chat_target, target_of
from gateway.upstream.routing.rules import RetryPolicy as RuleRetry
from providers.catalog import Catalog
from streams.fallback import RetryPolicy

HEDGE_FLOOR_S = 0.25
HEDGE_CEILING_S = 10.0
HEDGE_MIN_SAMPLES = 20
DEFAULT_RETRY_DELAY_MS = 100
MAX_RETRY_DELAY_S = 5.0


@attrs.frozen
class Plan:
    """The candidates of one request, best first, and how to race them.

    `capability` is the catalog capability the operation needs (`chat`, `embeddings`,
    `rerank`, `transcription`, `speech`, `ocr`): the error of a failed chain lists the
    models that offer it.
    """

    targets: tuple[Target, ...]
    capability: str
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    retryable_codes: tuple[str, ...] = ()

    @property
    def primary(self) -> Target:
        return self.targets[0]


def plan_of(
    targets: Iterable[Target],
    *,
    capability: str,
    service: ServiceOptions,
    rule_retry: RuleRetry | None = None,
) -> Plan:
    """A plan over `targets` (duplicates dropped, order kept) with the request's race
    policy: `service.retry` wins over a routing rule's `retry`."""
    unique: dict[tuple[str, str], Target] = {}
    for target in targets:
        unique.setdefault((target.provider_id, target.upstream_model), target)
    return Plan(
        tuple(unique.values()),
        capability,
        retry_policy(
            service.retry_max_attempts or (rule_retry.max_attempts if rule_retry else None),
            rule_retry.initial_delay_ms if rule_retry else None,
        ),
        service.retryable_errors,
    )


def plan_named(
    catalog: Catalog,
    active: Set[str],
    principal: Principal,
    *,
    model: str,
    provider: str | None,
    fallbacks: Sequence[str],
    capability: str,
    service: ServiceOptions,
    catalog_fallbacks: bool = True,
) -> Plan:
    """The plan of a request naming one model: the model, then `fallbacks` (each resolved
    like the model; a bad one is a 400 naming `service.fallbacks`), else (with
    `catalog_fallbacks`) the model's catalog chain. A forced `provider` has no fallbacks.
    Raises 4xx when the model or a named fallback cannot be used, or the key may not use
    it; the catalog's chain keeps only the models the key may use."""
    resolution = resolve_chat_target(
        catalog, active, model=model, provider=provider, mode="balanced", capability=capability
    )
    _check_capability(resolution.target, capability, model)
    targets = [resolution.target]
    if provider is None and fallbacks:
        targets += [_fallback(catalog, active, name, capability) for name in fallbacks]
    for target in targets:
        principal.require_model(target.model_id)
    if provider is None and not fallbacks and catalog_fallbacks:
        # The catalog's chain, less the models the key may not use: it never asked for them.
        targets += [
            t
            for t in resolution.alternatives
            if _offers(t, capability) and principal.may_use(t.model_id)
        ]
    return plan_of(targets, capability=capability, service=service)


def explicit_fallbacks(
    catalog: Catalog, names: Sequence[str], capability: str = "chat"
) -> list[Target]:
    """The fallback targets a request names in `service.fallbacks`. A name the catalog
    lacks, or a model without the capability, is a 400 naming it: no provider could
    serve it as a fallback, and dropping it silently left the client believing it had a
    fallback (embeddings and rerank refuse it the same way, `_fallback`)."""
    targets = []
    for name in names:
        info = catalog.model(name) or catalog.passthrough(name, capability)
        if info is None or capability not in info.capabilities:
            reason = "is not a known model" if info is None else f"does not support {capability}"
            raise invalid_fallback(f"'service.fallbacks' names '{name}', which {reason}.", name)
        targets.append(target_of(info))
    return targets


def _offers(target: Target, capability: str) -> bool:
    return target.info is None or capability in target.info.capabilities


def _check_capability(target: Target, capability: str, model: str) -> None:
    info = target.info
    if info is not None and capability not in info.capabilities:  # a forced provider skips
        raise invalid_request(
            f"The model '{info.id}' does not support {capability}.", param="model", value=model
        )


def _fallback(catalog: Catalog, active: Set[str], name: str, capability: str) -> Target:
    """A fallback resolved like the model itself; its faults name `service.fallbacks`."""
    try:
        resolution = resolve_chat_target(
            catalog, active, model=name, provider=None, mode="balanced", capability=capability
        )
        _check_capability(resolution.target, capability, name)
    except ApiError as exc:
        raise invalid_fallback(f"'service.fallbacks' names '{name}': {exc.message}", name) from None
    return resolution.target


def invalid_fallback(message: str, name: str) -> ApiError:
    """A fallback no provider could serve: a refusal of what the name means (the body's
    shape is right), with a code of its own."""
    return ApiError(400, "invalid_fallback", message, param="service.fallbacks", value=name)


def retry_policy(max_attempts: int | None, initial_delay_ms: int | None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=max(1, max_attempts or 1),
        initial_delay=(initial_delay_ms if initial_delay_ms is not None else DEFAULT_RETRY_DELAY_MS)
        / 1000,
        max_delay=MAX_RETRY_DELAY_S,
    )


def hedge_delay(
    health: HealthBook,
    workspace_id: str,
    configured_ms: Callable[[str], float | None],
    *,
    from_latency: bool,
) -> Callable[[Candidate], float | None]:
    """When to start the next candidate beside a silent one: the provider's configured
    `hedge_after_ms`, else (with `from_latency`) twice its observed p95 time to first
    result (within bounds, once enough requests were seen), else never."""

    def delay(candidate: Candidate) -> float | None:
        provider_id = candidate.target.provider_id
        configured = configured_ms(provider_id)
        if configured is not None:
            return configured / 1000
        if not from_latency:
            return None
        p95 = health.first_result_p95_ms(workspace_id, provider_id, HEDGE_MIN_SAMPLES)
        if p95 is None:
            return None
        return min(HEDGE_CEILING_S, max(HEDGE_FLOOR_S, 2 * p95 / 1000))

    return delay
