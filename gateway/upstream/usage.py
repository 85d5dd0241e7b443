"""One usage record per request, whatever the endpoint: the only place they are built.

`UsageLog` builds the record and hands it to the sinks the composition root plugged in
(the background writer, and, when their families are mounted, the metrics and the
realtime counters of several workers). With the usage log switched off it has no sinks
and builds nothing. The engine (`gateway.upstream.engine`) writes the record of every call
it makes; a family writes one itself only for a request refused before any call
(`refusal`, `rejecting`, `refusing`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import attrs

from gateway.platform.context import current_request
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import Accounting, account
from gateway.upstream.facts import RequestFacts
from gateway.upstream.resolve import Target
from providers.catalog import Catalog
from providers.types import Usage
from store.keys import ApiKeyRecord
from store.usage import UsageRecord

UsageSink = Callable[[UsageRecord], object]  # what it returns is not read


@attrs.frozen
class UsageLog:
    """Builds each request's record and gives it to every sink (see the module docstring)."""

    catalog: Catalog
    sinks: tuple[UsageSink, ...] = ()
    request_log: bool = False  # the records ask to be kept in the request log

    def record(
        self,
        facts: RequestFacts,
        target: Target,
        accounting: Accounting,
        *,
        status: int,
        error_code: str | None = None,
        cache_hit: bool = False,
        cache_savings_usd: float = 0.0,
    ) -> None:
        """Hand the request's record to the sinks (never blocks the request): every
        metered unit, its cost, footprint and latency, what served it, and the request's
        `prompt_hash` (a chat request's cache key, which the reports use to find repeated
        questions)."""
        if not self.sinks:
            return
        record = usage_record(
            facts,
            target,
            accounting,
            status=status,
            error_code=error_code,
            cache_hit=cache_hit,
            cache_savings_usd=cache_savings_usd,
            request_log=self.request_log,
        )
        for sink in self.sinks:
            sink(record)

    def nothing(self, facts: RequestFacts, target: Target) -> Accounting:
        """The accounting of a request that metered nothing (refused, or failed upstream)."""
        return account(
            self.catalog, target.info, Usage(), latency_ms=facts.elapsed_ms(), task_type=None
        )

    def failure(self, facts: RequestFacts, target: Target, status: int, code: str) -> None:
        """The record of a request that metered nothing and failed with `status`/`code`."""
        self.record(facts, target, self.nothing(facts, target), status=status, error_code=code)

    def refusal(self, facts: RequestFacts, target: Target, error: ApiError) -> None:
        """A request refused with `error` before any provider answered it (a limit's 429, or
        a 4xx for its body or parameters): a record with that status and code, metering
        nothing, so rate-limit hits and error rates count it. A plain call in the caller's
        `except` block: the chat path pays nothing for it when nothing is refused."""
        error.recorded = True
        self.failure(facts, target, error.status, error.code)

    @contextmanager
    def rejecting(
        self, facts: RequestFacts, named: Callable[[], object] = lambda: None
    ) -> Iterator[None]:
        """Around the checks of a request's form, body, file and parameters (never around
        its upstream call, which records itself): a client error there is recorded
        (`refusal`, once, under the model `named()` gives by then) so the error pages count
        invalid requests of every endpoint, not only chat's; the error goes on unchanged."""
        try:
            yield
        except ApiError as error:
            if 400 <= error.status < 500 and not error.recorded:
                self.refusal(facts, unplanned(named()), error)
            raise

    @contextmanager
    def refusing(self, facts: RequestFacts, target: Target) -> Iterator[None]:
        """Around admission: a request the limits refuse (429) is recorded (`refusal`); the
        error goes on unchanged."""
        try:
            yield
        except ApiError as error:
            if error.status == 429:
                self.refusal(facts, target, error)
            raise


def usage_record(
    facts: RequestFacts,
    target: Target,
    accounting: Accounting,
    *,
    status: int,
    error_code: str | None = None,
    cache_hit: bool = False,
    cache_savings_usd: float = 0.0,
    request_log: bool = False,
) -> UsageRecord:
    """The record of one request. With `request_log`, it carries what the request log
    adds: the call's trail (model asked, attempts, time to first token) and the trace id
    of the request running in this task."""
    footprint = accounting.footprint
    usage = accounting.usage
    labels = facts.labels
    trail = facts.trail
    context = current_request() if request_log else None
    return UsageRecord(
        request_id=facts.request_id,
        key_id=facts.principal.key_id,
        workspace_id=facts.principal.workspace_id,
        model=target.model_id,
        provider=target.provider_id,
        endpoint=facts.endpoint,
        status=status,
        created_at=datetime.fromtimestamp(facts.created, UTC),
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        audio_seconds=usage.audio_seconds,
        characters=usage.characters,
        pages=usage.pages,
        searches=usage.searches,
        bytes_stored=usage.bytes_stored,
        cost_usd=accounting.cost.total,
        latency_ms=accounting.latency_ms,
        energy_kwh=footprint.energy_kwh if footprint else 0.0,
        carbon_gco2e=footprint.carbon_gco2e if footprint else 0.0,
        error_code=error_code,
        cache_hit=cache_hit,
        cache_savings_usd=cache_savings_usd,
        project=labels.project,
        team=labels.team,
        tags=labels.tags,
        prompt_hash=facts.prompt_hash,
        agent_session=_agent_session(facts),
        request_log=request_log,
        model_requested=trail.model_requested or target.model_id or None,
        ttft_ms=trail.ttft_ms,
        attempts=trail.attempts,
        trace_id=context.trace_id if context is not None else None,
        body=trail.body.text() if request_log and trail.body is not None else None,
    )


def _agent_session(facts: RequestFacts) -> str | None:
    """An agent's session, kept so its cost is read back after a restart."""
    credential = facts.principal.credential
    if isinstance(credential, ApiKeyRecord) and credential.agent_id is not None:
        return facts.principal.agent_session
    return None


def unplanned(model: object) -> Target:
    """The target of a request refused before it was planned: the model it named (when it
    named one as text), no provider."""
    name = model if isinstance(model, str) else ""
    return Target(provider_id="", model_id=name, upstream_model=name, info=None)
