"""Which limits apply to a key: its own `rate_limits`, else its plan's defaults.

The spec gives requests and tokens per minute by plan (Free 60 / 40,000; Pro 600 /
400,000). Key kinds map to plans: `dev` keys are the limited development keys, so Free;
`prod`, `admin` and `tenant` keys are Pro. The spec shows no default for concurrent
requests; ours are 10 (Free) and 100 (Pro), about what one caller's burst needs at each
plan's rate. No daily limit applies unless the key sets one.

The spec shows no default monthly request limit either. A plan may declare one
(`PlanLimits.monthly`); neither of ours does, so a key has no monthly limit unless it sets
`monthly_requests`: a default would refuse paying callers for reasons they never chose,
and the per-minute and per-day limits already bound what a key can do.

Chat completions, embeddings and rerank pass the limiter (`gateway.upstream.admission`,
`LIMITED_ENDPOINTS`): a key's limits count every model request it makes. The daily and
monthly counts loaded from the usage log count the same endpoints, so that a restart
finds the count the limiter had.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from store.keys import ApiKeyRecord
from store.secrets import KeyKind

# What a request reserves for its answer when it names no `max_tokens` (the actual
# count replaces the reservation when the request ends).
DEFAULT_COMPLETION_RESERVE = 1024


# The `endpoint` values of the usage records whose requests the limiter admits.
LIMITED_ENDPOINTS: tuple[str, ...] = ("chat", "embeddings", "rerank")


@attrs.frozen
class PlanLimits:
    """A plan's defaults; `monthly` None means no monthly limit."""

    rpm: int
    tpm: int
    concurrent: int
    monthly: int | None = None


FREE = PlanLimits(rpm=60, tpm=40_000, concurrent=10, monthly=None)
PRO = PlanLimits(rpm=600, tpm=400_000, concurrent=100, monthly=None)
PLAN_BY_KIND: Mapping[KeyKind, PlanLimits] = {
    "dev": FREE,
    "prod": PRO,
    "admin": PRO,
    "tenant": PRO,
}


@attrs.frozen
class EffectiveLimits:
    """The limits enforced for one key; `daily` (`monthly`) None means no daily (monthly)
    limit."""

    rpm: int
    tpm: int
    concurrent: int
    daily: int | None
    monthly: int | None

    @property
    def counts_periods(self) -> bool:
        """Whether the key's requests are counted by UTC day and month."""
        return self.daily is not None or self.monthly is not None


def effective_limits(key: ApiKeyRecord) -> EffectiveLimits:
    plan = PLAN_BY_KIND.get(key.kind, PRO)
    own = key.rate_limits
    return EffectiveLimits(
        rpm=plan.rpm if own.rpm is None else own.rpm,
        tpm=plan.tpm if own.tpm is None else own.tpm,
        concurrent=plan.concurrent if own.concurrent is None else own.concurrent,
        daily=own.daily_requests,
        monthly=plan.monthly if own.monthly_requests is None else own.monthly_requests,
    )


def reservation_tokens(limits: EffectiveLimits, prompt_tokens: int, max_tokens: int | None) -> int:
    """Tokens to reserve when admitting a request: the prompt estimate plus `max_tokens`.

    Without `max_tokens` the default reserve is cut to what the tpm limit leaves beside the
    prompt, so a default never makes a request too large on its own.
    """
    if max_tokens is not None:
        return prompt_tokens + max_tokens
    return prompt_tokens + min(DEFAULT_COMPLETION_RESERVE, max(0, limits.tpm - prompt_tokens))
