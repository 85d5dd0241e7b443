"""Taking a request's share of its key's limits: the one entry for every limited endpoint.

Chat completions, embeddings, rerank, audio and OCR all pass here, so a key's rpm, tpm,
daily, monthly and concurrency limits count every model request it makes, whichever
endpoint. The request's `service.rate_limit_strategy` decides what a full limit means:
`queue` waits (at most `service.max_wait_ms`) for capacity, anything else is refused at
once with the 429 of the limit that is spent.

The composition root may plug in admission policies (an agent's limits, from the agents
family): a policy that claims the request's key admits it before the key's own limits and
holds its share until the request ends, charged what the request really cost on the
model that served it. Without policies (or for a key no policy claims) admission costs no
more than the key's limits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Protocol

import attrs

from gateway.platform.auth import Principal
from gateway.upstream.limits import Hold, LimitBackend, Unlimited
from gateway.upstream.limits.policy import DEFAULT_COMPLETION_RESERVE
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan
from providers.catalog import ModelInfo
from providers.types import Usage
from store.keys import ApiKeyRecord

PlanMaker = Callable[[], Plan]


@attrs.frozen
class Ask:
    """What one request asks of an admission policy: who calls, the metered units it is
    expected to use, and the plan that prices them (made only when a policy needs it).
    `cost` is the expected cost when the caller knows it better than a plan can (an
    upload's processing)."""

    principal: Principal
    usage: Usage
    plan: Plan | PlanMaker | None = None
    cost: float | None = None

    def planned(self) -> Plan | None:
        return self.plan() if callable(self.plan) else self.plan

    def candidates(self) -> tuple[Sequence[ModelInfo | None], str]:
        """The models that may serve the request, and the capability they serve."""
        plan = self.planned()
        if plan is None:
            return (), ""
        return tuple(t.info for t in plan.targets), plan.capability


class PolicyHold(Protocol):
    """A policy's share of one request, held until the request ends."""

    def charge(self, model: ModelInfo | None, usage: Usage) -> None:
        """Replace the share by what `usage` cost on `model` (the first call counts)."""
        ...

    def release(self) -> None:
        """Give the share back, charging nothing more than was charged (idempotent)."""
        ...


class AdmissionPolicy(Protocol):
    """Limits beyond the key's own, plugged in by a family (see the module docstring)."""

    def claims(self, key: ApiKeyRecord) -> bool:
        """Whether this policy limits requests of `key` (a cheap, synchronous check)."""
        ...

    async def admit(self, ask: Ask) -> PolicyHold:
        """Take the request's share or raise the refusal (`ApiError`). Cancellation:
        nothing is taken."""
        ...

    async def precheck(self, principal: Principal) -> None:
        """Raise now what `admit` would refuse whatever the request (a suspended agent),
        before a request's body is read. Takes nothing."""
        ...


@attrs.define(eq=False)
class Admission:
    """Admission under the key's limits (`limits`, None when they are switched off) and
    the policies plugged in."""

    limits: LimitBackend | None
    policies: tuple[AdmissionPolicy, ...] = ()

    async def admit(
        self,
        principal: Principal,
        service: ServiceOptions,
        *,
        prompt_tokens: int,
        max_tokens: int | None,
        plan: Plan | PlanMaker | None = None,
        usage: Usage | None = None,
        cost: float | None = None,
    ) -> Hold:
        """Admit one request of `principal`'s key (raises the 429 `ApiError` when a limit is
        spent, a policy's refusal).

        `max_tokens` is what the answer may add to `prompt_tokens` (0 for endpoints whose
        answer is not text); None reserves the default completion. `plan` (or a function
        that makes it, called only when a policy prices the request), `usage` (the
        metered units the request is expected to use; by default its tokens) and `cost`
        are what a policy sees. The hold is settled with the real count when the request
        ends (`gateway.upstream.engine.Engine.settle`). Cancellation: nothing has been
        taken.
        """
        key = principal.key
        policies = [p for p in self.policies if p.claims(key)] if self.policies else ()
        if not policies:
            return await self._key_hold(key, service, prompt_tokens, max_tokens)
        if usage is None:
            completion = DEFAULT_COMPLETION_RESERVE if max_tokens is None else max_tokens
            usage = Usage(prompt_tokens, completion)
        ask = Ask(principal, usage, plan, cost)
        hold = PolicyBound(Unlimited(), [])
        try:
            for policy in policies:
                hold.shares.append(await policy.admit(ask))
            hold.inner = await self._key_hold(key, service, prompt_tokens, max_tokens)
        except BaseException:
            hold.release()
            raise
        return hold

    def claims(self, principal: Principal) -> bool:
        """Whether a policy limits this caller's requests beyond its key's limits."""
        return any(policy.claims(principal.key) for policy in self.policies)

    async def precheck(self, principal: Principal) -> None:
        """Refuse, before a large body is read, a caller a policy refuses whatever it
        asks (a suspended agent); nothing is taken."""
        key = principal.key
        for policy in self.policies:
            if policy.claims(key):
                await policy.precheck(principal)

    async def admit_policies(self, ask: Ask) -> PolicyBound | None:
        """Only the policies' shares, for a request the key's limits do not count (an
        upload whose processing a policy prices); None when no policy claims the key."""
        policies = [p for p in self.policies if p.claims(ask.principal.key)]
        if not policies:
            return None
        hold = PolicyBound(Unlimited(), [])
        try:
            for policy in policies:
                hold.shares.append(await policy.admit(ask))
        except BaseException:
            hold.release()
            raise
        return hold

    async def _key_hold(
        self,
        key: ApiKeyRecord,
        service: ServiceOptions,
        prompt_tokens: int,
        max_tokens: int | None,
    ) -> Hold:
        limiter = self.limits
        if limiter is None:
            return Unlimited()
        reserve = limiter.estimate(key, prompt_tokens, max_tokens)
        if service.rate_limit_strategy == "queue":
            max_wait_s = (service.max_wait_ms or 0) / 1000
            return await limiter.wait_for_capacity(key, reserve, max_wait_s)
        return await limiter.acquire(key, reserve)


@attrs.define(eq=False)
class PolicyBound:
    """A key's hold together with the shares of the policies that admitted the request:
    given back, or settled and charged, together."""

    inner: Hold
    shares: list[PolicyHold]

    @property
    def released(self) -> bool:
        return self.inner.released

    def headers(self) -> dict[str, str]:
        return self.inner.headers()

    def settle(self, usage: Usage) -> None:
        self.inner.settle(usage)

    def charge(self, model: ModelInfo | None, usage: Usage) -> None:
        for share in self.shares:
            share.charge(model, usage)

    def release(self) -> None:
        self.inner.release()
        for share in self.shares:
            share.release()

    def __enter__(self) -> PolicyBound:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
