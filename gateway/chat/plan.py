"""What a chat request will call: its route, its chain of candidates, its cache entry.

Routing: a forced `provider` is served by that provider alone; otherwise the first
enabled routing rule that matches decides (its `route_to`, `fallbacks`, `retry`, `cache`
and `transform`), else the routing mode (body, then `X-Routing-Mode`, then `balanced`)
over the catalog. The chain is the routed target, then explicit fallbacks (a rule's or
`service.fallbacks`), else the catalog's alternatives.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

import attrs

from gateway.chat.cache import cache_key, decide_cache
from gateway.chat.input import NO_SERVICE, ChatParams
from gateway.chat.model_fit import (
    NOTHING,
    fallbacks_with,
    fitted,
    honoured,
    honouring,
    json_needs,
    narrowed,
    needed_capabilities,
    prompt_tokens,
)
from gateway.chat.plan_cache import hashable_shape
from gateway.chat.services import ChatServices
from gateway.chat.tasks import classify
from gateway.chat.trip import Trip
from gateway.chat.truncation import truncated
from gateway.platform.auth import Principal
from gateway.platform.errors import invalid_request
from gateway.upstream.accounting import estimate_prompt_tokens
from gateway.upstream.facts import RequestFacts
from gateway.upstream.options import ROUTING_MODES
from gateway.upstream.plan import Plan, explicit_fallbacks, plan_of
from gateway.upstream.resolve import Resolution, RoutingSignals, Target, resolve_chat_target
from gateway.upstream.routing.apply import routed_resolution
from gateway.upstream.routing.context import chat_context
from gateway.upstream.routing.rules import Rule, match_rule
from gateway.upstream.routing.transform import apply_transform
from providers.chat_params import VENDOR_PARAMETERS
from providers.types.chat import ChatRequest
from store.keys import ApiKeyRecord


@attrs.frozen
class CachePlan:
    key: str
    ttl_s: float


def plan_trip(
    chat: ChatServices,
    facts: RequestFacts,
    params: ChatParams,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    keyed: bool = False,
) -> Trip:
    """Route the request: a forced provider, else the first matching rule, else the mode.

    A matching rule's `transform` is applied here, so the limits, the cache key and the
    upstream all see the request as transformed. The task type goes into the facts, and
    with `keyed` the cache key too (`prompt_hash`, which chat's usage record keeps): the
    facts are built once, where each addition was an `attrs.evolve` of its own.
    """
    principal = facts.principal
    mode = params.routing_mode or _header_mode(headers) or "balanced"
    rule = _matching_rule(chat, principal, params, headers, body)
    transform = rule.actions.transform if rule else None
    if transform is not None:  # after matching: the conditions saw what the client sent
        params = attrs.evolve(params, request=apply_transform(transform, params.request))
    base, kept = _routed(chat, principal, params, rule, mode)
    if params.kept_on_truncation is not None:  # only a door's client asks (never chat's)
        params = _truncated(params, base)
        kept = False
    resolution = _narrowed(chat, principal, params, base, kept=kept)
    task_type = classify(params.request.messages, headers.get("x-service-task-type"))
    prompt_hash = (
        _key_of(principal, resolution.target, params.request) if keyed else facts.prompt_hash
    )
    return Trip(
        facts=facts.planned(task_type, prompt_hash),
        params=params,
        resolution=resolution,
        rule=rule,
    )


def _routed(
    chat: ChatServices, principal: Principal, params: ChatParams, rule: Rule | None, mode: str
) -> tuple[Resolution, bool]:
    """The routed resolution (before the request's fit is checked), and whether it is the
    one kept for its provider sets (a named model, no rule, no latency signal)."""
    engine = chat.engine
    active = engine.registry.active_ids(principal.workspace_id)
    if params.provider is not None:
        forced = resolve_chat_target(
            engine.catalog, active, model=params.model, provider=params.provider, mode=mode
        )
        return forced, False
    for fallback in explicit_fallbacks(engine.catalog, params.service.fallbacks):
        principal.require_model(fallback.model_id)  # a 400 or 403 before admission
    signals = _signals(chat, principal.workspace_id) if params.model == "auto" else None
    disabled = engine.registry.disabled_ids(principal.workspace_id)

    def resolve() -> Resolution:
        return routed_resolution(
            engine.catalog,
            active,
            rule,
            model=params.model,
            mode=mode,
            signals=signals,
            disabled=disabled,
        )

    if rule is None and signals is None:  # a function of the provider sets alone
        return chat.resolutions.resolved(active, disabled, params.model, mode, resolve), True
    return resolve(), False


def _narrowed(
    chat: ChatServices, principal: Principal, params: ChatParams, base: Resolution, *, kept: bool
) -> Resolution:
    """`base` without the targets that cannot take the request (capabilities, vendor
    parameters, the key's models, sizes): made once per shape of request when `base`
    is a kept routing (`gateway.chat.plan_cache`), else in full."""
    request = params.request
    flexible = params.model == "auto"
    json_mode = json_needs(request.response_format)
    needs = needed_capabilities(request.messages) | (json_mode if flexible else NOTHING)
    prompt = prompt_tokens(request.messages, request.tools)

    def narrow(resolution: Resolution) -> Resolution:
        resolution = fitted(
            resolution,
            prompt=prompt,
            max_tokens=request.max_tokens,
            flexible=flexible,
            needs=needs,
            messages=request.messages,
        )
        if json_mode and not flexible:
            resolution = fallbacks_with(resolution, json_mode)
        resolution = honoured(resolution, request, flexible=flexible)
        return permitted(resolution, principal, flexible=flexible)

    shape = _shape(principal, request, flexible, needs, json_mode) if kept else None
    if shape is None:
        return narrow(base)
    return chat.plans.planned(base, shape, prompt, request.max_tokens, narrow)


_VENDOR_VALUES = attrgetter(*(p.field or p.name for p in VENDOR_PARAMETERS))


def _shape(
    principal: Principal,
    request: ChatRequest,
    flexible: bool,
    needs: frozenset[str],
    json_mode: frozenset[str],
) -> Hashable | None:
    """Everything the narrowing reads apart from the sizes: the capabilities needed, the
    values of the vendor parameters (read in one call; their checks read nothing else of
    the request) with their types (`True` is not `1` to a vendor), the key's models. None
    for a caller without a key, or a value that cannot be a key (an object, a list)."""
    credential = principal.credential
    if not isinstance(credential, ApiKeyRecord):
        return None
    values = _VENDOR_VALUES(request)
    return hashable_shape(
        flexible,
        needs,
        json_mode,
        values,
        tuple(map(type, values)),
        credential.allowed_models,
    )


def _truncated(params: ChatParams, resolution: Resolution) -> ChatParams:
    """The conversation shortened to fit the routed target's window, when it must."""
    assert params.kept_on_truncation is not None
    request = truncated(params.request, params.kept_on_truncation, resolution.target.info)
    return params if request is params.request else attrs.evolve(params, request=request)


def permitted(resolution: Resolution, principal: Principal, *, flexible: bool) -> Resolution:
    """The resolution without the models the key may not use (its `allowed_models`).

    A key restricted to some models is never served by another: the catalog's
    alternatives it may not use leave the chain (a failing model fell back to one), and
    `auto` takes the first candidate it may use (it answered 403 for the routed one). A
    named model it may not use, or no permitted candidate at all, is `403
    model_not_allowed` naming the routed target.
    """
    return narrowed(
        resolution,
        lambda t: principal.may_use(t.model_id),
        flexible=flexible,
        refusal=lambda: principal.model_refusal(resolution.target.model_id),
        why="the key may not use the others",
    )


def chain_plan(chat: ChatServices, trip: Trip) -> Plan:
    """The routed target, then explicit fallbacks (rule or request), else the catalog's
    chain for the model (or, for `auto`, the other candidates it was chosen among). A
    forced provider bypasses routing entirely: no fallbacks. A request without options,
    rule or provider of its own races its kept plan's chain, made once
    (`gateway.chat.plan_cache`)."""
    params = trip.params
    if params.service is NO_SERVICE and trip.rule is None and params.provider is None:
        return chat.plans.chain(trip.resolution, lambda: _chain_plan(chat, trip))
    return _chain_plan(chat, trip)


def _chain_plan(chat: ChatServices, trip: Trip) -> Plan:
    targets = [trip.resolution.target]
    service = trip.params.service
    if trip.params.provider is None:
        explicit = service.fallbacks
        if explicit:  # those that cannot honour the request's parameters are skipped
            named = explicit_fallbacks(chat.engine.catalog, explicit)
            targets += honouring(named, trip.params.request)
        else:
            targets += trip.resolution.alternatives
    return plan_of(
        targets,
        capability="chat",
        service=service,
        rule_retry=trip.rule.actions.retry if trip.rule else None,
    )


def cache_plan(chat: ChatServices, trip: Trip) -> CachePlan | None:
    """Whether and under which key the answer is cached (settings, the rule, the request)."""
    settings = chat.settings
    rule_cache = trip.rule.actions.cache if trip.rule else None
    decision = decide_cache(
        default_enabled=settings.cache_enabled,
        default_ttl_s=settings.cache_ttl_s,
        rule_enabled=rule_cache.enabled if rule_cache else None,
        rule_ttl_s=float(rule_cache.ttl_seconds) if rule_cache else None,
        skip=trip.params.service.cache_skip,
    )
    if not decision.enabled:
        return None
    return CachePlan(prompt_key(trip), decision.ttl_s)


def prompt_key(trip: Trip) -> str:
    """The request's cache key (the same question to the same model has the same key):
    the one planning worked out when asked to (`keyed`), else worked out now."""
    return trip.facts.prompt_hash or _key_of(trip.principal, trip.target, trip.params.request)


def _key_of(principal: Principal, target: Target, request: ChatRequest) -> str:
    return cache_key(
        workspace_id=principal.workspace_id,
        provider_id=target.provider_id,
        upstream_model=target.upstream_model,
        request=request,
    )


def prompt_estimate(trip: Trip) -> int:
    return estimate_prompt_tokens(trip.params.request.messages, trip.params.request.tools)


def _signals(chat: ChatServices, workspace_id: str) -> RoutingSignals:
    health = chat.engine.health

    def observed(provider_id: str) -> float | None:
        return health.figures(workspace_id, provider_id).latency_ms

    return RoutingSignals(observed_latency_ms=observed)


def _matching_rule(
    chat: ChatServices,
    principal: Principal,
    params: ChatParams,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
) -> Rule | None:
    if params.provider is not None:  # a forced provider bypasses routing, rules included
        return None
    rules = chat.rules.enabled(principal.workspace_id)
    if not rules:
        return None
    context = chat_context(chat.engine.catalog, principal.key, body, headers, datetime.now(UTC))
    return match_rule(rules, context)


def _header_mode(headers: Mapping[str, str]) -> str | None:
    value = headers.get("x-routing-mode")
    if value is None:
        return None
    if value not in ROUTING_MODES:
        raise invalid_request(
            "'X-Routing-Mode' names no routing mode.", param="X-Routing-Mode", value=value
        )
    return value
