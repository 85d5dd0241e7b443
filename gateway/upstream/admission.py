"""Taking a request's share of its key's limits: the one entry for every limited endpoint.

Chat completions, embeddings, rerank, audio and OCR all pass here, so a key's rpm, tpm,
daily, monthly and concurrency limits count every model request it makes, whichever
endpoint. The request's `service.rate_limit_strategy` decides what a full limit means:
`queue` waits (at most `service.max_wait_ms`) for capacity, anything else is refused at
once with the 429 of the limit that is spent.

An agent's key (`key.agent_id`) also passes its agent's limits here, before its key's
(`gateway.agents.gate`): the request's expected `usage`, priced at the dearest of the
`plan`'s candidates, is reserved and settled from what the request really used. For any
other key that costs one attribute check.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.agents.gate import admit_agent, estimate
from gateway.agents.hold import AgentHold
from gateway.platform.auth import Principal
from gateway.platform.state import AppState
from gateway.upstream.facts import RequestFacts
from gateway.upstream.limits import Hold, Unlimited
from gateway.upstream.limits.policy import DEFAULT_COMPLETION_RESERVE
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.types import Usage
from store.keys import ApiKeyRecord


async def admit(
    state: AppState,
    principal: Principal,
    service: ServiceOptions,
    *,
    prompt_tokens: int,
    max_tokens: int | None,
    plan: Plan | Callable[[], Plan] | None = None,
    usage: Usage | None = None,
) -> Hold:
    """Admit one request of `principal`'s key (raises the 429 `ApiError` when a limit is
    spent, the 403 of a suspended agent).

    `max_tokens` is what the answer may add to `prompt_tokens` (0 for endpoints whose
    answer is not text); None reserves the default completion. `plan` (or a function
    that makes it, called only for an agent) and `usage` (the metered units the request
    is expected to use; by default its tokens) price an agent's request. The hold is
    settled with the real count when the request ends. Cancellation: nothing has been
    taken.
    """
    key = principal.key
    agent_id = key.agent_id
    if agent_id is None:
        return await _key_hold(state, key, service, prompt_tokens, max_tokens)
    if usage is None:
        completion = DEFAULT_COMPLETION_RESERVE if max_tokens is None else max_tokens
        usage = Usage(prompt_tokens, completion)
    if callable(plan):
        plan = plan()
    models = () if plan is None else tuple(t.info for t in plan.targets)
    capability = "" if plan is None else plan.capability
    amounts = estimate(usage, models, capability)
    session = principal.agent_session
    reservation = await admit_agent(state.agents, agent_id, session, amounts)
    hold = AgentHold(Unlimited(), state.agents, reservation, capability)
    try:
        hold.inner = await _key_hold(state, key, service, prompt_tokens, max_tokens)
    except BaseException:
        hold.release()
        raise
    return hold


async def _key_hold(
    state: AppState,
    key: ApiKeyRecord,
    service: ServiceOptions,
    prompt_tokens: int,
    max_tokens: int | None,
) -> Hold:
    if not state.settings.rate_limits_enabled:
        return Unlimited()
    limiter = state.limiter
    reserve = limiter.estimate(key, prompt_tokens, max_tokens)
    if service.rate_limit_strategy == "queue":
        max_wait_s = (service.max_wait_ms or 0) / 1000
        return await limiter.wait_for_capacity(key, reserve, max_wait_s)
    return await limiter.acquire(key, reserve)


def settle(state: AppState, facts: RequestFacts, target: Target, hold: Hold, usage: Usage) -> None:
    """Charge the key what the request really used (admission reserved an estimate), and
    count the tokens against what the gateway sends the serving provider; an agent is
    charged the cost of `usage` on the model that served."""
    hold.settle(usage)
    if isinstance(hold, AgentHold):
        hold.charge(target.info, usage)
    state.limits.upstream.record_tokens(
        facts.principal.workspace_id, target.provider_id, usage.total_tokens
    )
