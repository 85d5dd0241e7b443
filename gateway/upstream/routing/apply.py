"""What a matched rule does to a chat request's routing, and the rule-test dry run (pure).

Order of precedence (ARCHITECTURE, request path step 4): an explicit `provider` in the
body bypasses routing, rules included; otherwise the first matching rule's `route_to`
replaces the requested model and its `fallbacks` replace the catalog's fallback chain;
otherwise the routing mode decides (`auto`) or the requested model is served.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

import attrs

from gateway.upstream.accounting import estimate_prompt_tokens
from gateway.upstream.resolve import (
    Resolution,
    RoutingSignals,
    Target,
    able_providers,
    resolve_chat_target,
    target_of,
)
from gateway.upstream.routing.rules import Evaluation, RequestContext, Rule, explain
from gateway.upstream.routing.transform import apply_transform
from providers.catalog import Catalog, CostBreakdown
from providers.types import ChatRequest

TYPICAL_OUTPUT_TOKENS = 256
"""Completion size assumed by cost estimates when the request sets no `max_tokens`."""


def routed_resolution(
    catalog: Catalog,
    active: Set[str],
    rule: Rule | None,
    *,
    model: str,
    mode: str,
    signals: RoutingSignals | None = None,
    disabled: Set[str] = frozenset(),
) -> Resolution:
    """The target and fallback chain for `model` once `rule` (if any) is applied.

    Raises the same 4xx `ApiError`s as `resolve_chat_target` (e.g. 404 when the model a
    rule routes to is served by a provider the workspace has not configured); `disabled`
    as there.
    """
    routed_model = (rule.actions.route_to or model) if rule is not None else model
    base = resolve_chat_target(
        catalog,
        active,
        model=routed_model,
        provider=None,
        mode=mode,
        signals=signals,
        disabled=disabled,
    )
    if rule is None:
        return base
    alternatives = base.alternatives
    if rule.actions.fallbacks:
        able = able_providers(active, "chat")  # only adapters that serve chat
        alternatives = rule_fallbacks(catalog, able, rule.actions.fallbacks, base.target)
    reasoning = f"routing rule '{rule.name}' ({rule.id}, priority {rule.priority})"
    if rule.actions.route_to:
        reasoning += f" routes to {base.target.model_id}"
    return Resolution(base.target, alternatives, mode, reasoning)


def rule_fallbacks(
    catalog: Catalog, active: Set[str], models: Iterable[str], primary: Target
) -> tuple[Target, ...]:
    """The rule's fallbacks in order: known models of active providers, without the
    primary and without repeats."""
    chain: list[Target] = []
    seen = {primary.model_id}
    for name in models:
        info = catalog.model(name) or catalog.passthrough(name, "chat")
        if info is None or info.provider not in active or info.id in seen:
            continue
        seen.add(info.id)
        chain.append(target_of(info))
    return tuple(chain)


@attrs.frozen
class DryRun:
    """What `POST /v1/management/routing-rules/test` reports."""

    matched: Rule | None
    evaluations: tuple[Evaluation, ...]
    resolution: Resolution
    prompt_tokens: int
    completion_tokens: int
    cost: CostBreakdown | None  # None when the resolved model has no catalog price
    request: ChatRequest  # as the upstream would receive it (the rule's transform done)

    @property
    def fallback_chain(self) -> list[str]:
        return [t.model_id for t in self.resolution.alternatives]


def dry_run(
    catalog: Catalog,
    active: Set[str],
    rules: Iterable[Rule],
    ctx: RequestContext,
    *,
    model: str,
    mode: str,
    request: ChatRequest,
    provider: str | None = None,
    disabled: Set[str] = frozenset(),
) -> DryRun:
    """Match `ctx` against `rules`, resolve the model as chat would, and price it.

    A forced `provider` bypasses the rules, as it does in chat: nothing is evaluated.
    `disabled` are the workspace's providers switched off: their models fall back as in
    chat. The matched rule's transform is applied to `request` as chat would, and the estimate
    follows it: a capped `max_tokens`, the tokens a system prompt adds or removes.
    """
    if provider is not None:
        trail: tuple[Evaluation, ...] = ()
        matched = None
        resolution = resolve_chat_target(catalog, active, model=model, provider=provider, mode=mode)
    else:
        trail = tuple(explain(rules, ctx))
        matched = trail[-1].rule if trail and trail[-1].matched else None
        resolution = routed_resolution(
            catalog, active, matched, model=model, mode=mode, disabled=disabled
        )
    resolution = _first_active(resolution, active)
    sent = _transformed(matched, request)
    prompt = max(0, ctx.prompt_tokens + _prompt_delta(request, sent))
    completion = sent.max_tokens if sent.max_tokens is not None else TYPICAL_OUTPUT_TOKENS
    info = resolution.target.info
    cost = info.cost(prompt, completion) if info is not None else None
    return DryRun(matched, trail, resolution, prompt, completion, cost, sent)


def _first_active(resolution: Resolution, active: Set[str]) -> Resolution:
    """The resolution as the engine will serve it: a target whose provider is switched
    off is skipped for the first active one of its chain."""
    chain = (resolution.target, *resolution.alternatives)
    for index, target in enumerate(chain):
        if target.provider_id in active:
            return attrs.evolve(resolution, target=target, alternatives=chain[index + 1 :])
    return resolution


def _transformed(rule: Rule | None, request: ChatRequest) -> ChatRequest:
    transform = rule.actions.transform if rule is not None else None
    return request if transform is None else apply_transform(transform, request)


def _prompt_delta(before: ChatRequest, after: ChatRequest) -> int:
    """How much the transform grew (or shrank) the prompt; 0 when it left the messages."""
    if after.messages == before.messages:
        return 0
    return estimate_prompt_tokens(after.messages, after.tools) - estimate_prompt_tokens(
        before.messages, before.tools
    )
