"""Building the core's services once, and plugging the families' hooks into them.

The engine, admission and the authenticator are built here, in the composition root,
with what each needs; the hooks the core offers are filled from the families that are
mounted: the usage record's sinks (the usage log's writer; the metrics; the realtime
counters of several workers), the observers of each winning attempt (the metrics), and
the admission policies (an agent's limits). The core runs with none of them.
"""

from __future__ import annotations

from functools import partial

from gateway.agents.policy import AgentPolicy
from gateway.chat.services import ChatServices
from gateway.files import pii, pii_worker
from gateway.platform.callers import Authenticator
from gateway.platform.context import note_usage
from gateway.platform.state import AppState
from gateway.requestlog.bodies import BodySealer
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from gateway.upstream.usage import UsageLog, UsageSink


def assemble(state: AppState) -> None:
    """Build the core's services and the converted families' services into `state`."""
    settings = state.settings
    state.engine = Engine(
        state.catalog,
        state.registry,
        state.breakers,
        state.health,
        state.limits.upstream,
        UsageLog(
            state.catalog,
            usage_sinks(state) if settings.usage_log_enabled else (),
            request_log=settings.request_log_days > 0,
        ),
        hedge_from_latency=settings.hedge_from_latency,
        shared_breakers=state.shared_breakers,
        on_first_result=(state.metrics.upstream_first_byte,),
        tracing=state.tracing,
    )
    state.admission = Admission(
        state.limiter if settings.rate_limits_enabled else None,
        policies=(AgentPolicy(state.agents),),
    )
    state.auth = Authenticator(state.keyring, state.db)
    state.chat = ChatServices(
        state.engine,
        state.admission,
        state.rules,
        state.cache,
        settings,
        shared_cache=state.shared_cache,
        bodies=state.bodies,
    )
    state.usage.seal = body_sealer(state).seal


def body_sealer(state: AppState) -> BodySealer:
    """The request log's bodies sealed by the files family's PII detector, in its worker
    process, and the store's credential cipher."""
    redact = partial(pii_worker.run_scan, pii.redact_json, limiter=state.files.pii_scans)
    return BodySealer(state.cipher, redact)


def usage_sinks(state: AppState) -> tuple[UsageSink, ...]:
    """Where each usage record goes: its request's context (the access log line and the
    request metrics name its provider, model, tokens and cost), the metrics, the writer
    (and with it the request log), and (several workers) the realtime counters every
    worker's analytics page reads."""
    sinks: list[UsageSink] = [note_usage, state.metrics.observe_usage, state.usage.submit]
    if state.shared_live is not None:
        sinks.append(state.shared_live.count)
    return tuple(sinks)
