"""Taking a request's share of its key's limits: the one entry for every limited endpoint.

Chat completions, embeddings and rerank all pass here, so a key's rpm, tpm, daily,
monthly and concurrency limits count every model request it makes, whichever endpoint.
The request's `service.rate_limit_strategy` decides what a full limit means: `queue`
waits (at most `service.max_wait_ms`) for capacity, anything else is refused at once
with the 429 of the limit that is spent.
"""

from __future__ import annotations

from gateway.platform.state import AppState
from gateway.upstream.facts import RequestFacts
from gateway.upstream.limits import Hold, Unlimited
from gateway.upstream.options import ServiceOptions
from gateway.upstream.resolve import Target
from providers.types import Usage
from store.keys import ApiKeyRecord


async def admit(
    state: AppState,
    key: ApiKeyRecord,
    service: ServiceOptions,
    *,
    prompt_tokens: int,
    max_tokens: int | None,
) -> Hold:
    """Admit one request of `key` (raises the 429 `ApiError` when a limit is spent).

    `max_tokens` is what the answer may add to `prompt_tokens` (0 for endpoints whose
    answer is not text); None reserves the default completion. The hold is settled with
    the real count when the request ends. Cancellation: nothing has been taken.
    """
    if not state.settings.rate_limits_enabled:
        return Unlimited()
    limiter = state.limiter
    estimate = limiter.estimate(key, prompt_tokens, max_tokens)
    if service.rate_limit_strategy == "queue":
        max_wait_s = (service.max_wait_ms or 0) / 1000
        return await limiter.wait_for_capacity(key, estimate, max_wait_s)
    return await limiter.acquire(key, estimate)


def settle(state: AppState, facts: RequestFacts, target: Target, hold: Hold, usage: Usage) -> None:
    """Charge the key what the request really used (admission reserved an estimate), and
    count the tokens against what the gateway sends the serving provider."""
    hold.settle(usage)
    state.limits.upstream.record_tokens(
        facts.principal.workspace_id, target.provider_id, usage.total_tokens
    )
