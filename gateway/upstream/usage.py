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
    # In `UsageRecord`'s field order, as one tuple: ~2 K instructions against ~27 K for
    # the named tuple's keyword constructor (`test_usage_record_fields` checks the order).
    return _tuple_new(
        UsageRecord,
        (
            facts.request_id,
            facts.principal.key_id,
            facts.principal.workspace_id,
            target.model_id,
            target.provider_id,
            facts.endpoint,
            status,
            datetime.fromtimestamp(facts.created, UTC),
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.audio_seconds,
            usage.characters,
            usage.pages,
            usage.searches,
            usage.bytes_stored,
            accounting.cost.total,
            accounting.latency_ms,
            footprint.energy_kwh if footprint else 0.0,
            footprint.carbon_gco2e if footprint else 0.0,
            error_code,
            cache_hit,
            cache_savings_usd,
            labels.project,
            labels.team,
            labels.tags,
            facts.prompt_hash,
            _agent_session(facts),
            request_log,
            trail.model_requested or target.model_id or None,
            trail.ttft_ms,
            trail.attempts,
            context.trace_id if context is not None else None,
            trail.body.text() if request_log and trail.body is not None else None,
            False,
        ),
    )


_tuple_new = tuple.__new__


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
