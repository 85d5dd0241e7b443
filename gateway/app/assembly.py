"""Building the core's services once, and plugging the families' hooks into them.

The engine, admission and the authenticator are built here, in the composition root,
with what each needs; the hooks the core offers are filled from the families that are
mounted: the usage record's sinks (the usage log's writer; the metrics; the realtime
counters of several workers), the observers of each winning attempt (the metrics), and
the admission policies (an agent's limits). The core runs with none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from functools import partial
from typing import Any, TypeVar, cast

from gateway.admin.services import AdminServices
from gateway.agents.policy import AgentPolicy
from gateway.agents.services import AgentsServices
from gateway.analytics.services import AnalyticsServices
from gateway.app.state import AppState
from gateway.chat.service import serve_chat
from gateway.chat.services import ChatServices
from gateway.kernels.dialects import Dialect, ServeChat
from gateway.kernels.endpoints import Endpoint
from gateway.kernels.pii import detector as pii
from gateway.kernels.pii import worker as pii_worker
from gateway.kernels.webhooks.services import Webhooks
from gateway.operator.live import LiveSources
from gateway.operator.services import OperatorServices
from gateway.organization.services import OrganizationServices
from gateway.platform.auth import Principal
from gateway.platform.body import Answering
from gateway.platform.callers import Authenticator
from gateway.platform.context import note_usage
from gateway.platform.extras import FILES
from gateway.platform.jsonio import JsonAnswer
from gateway.requestlog.bodies import BodySealer
from gateway.requestlog.kept import LoggedRequests
from gateway.requestlog.services import RequestLogServices
from gateway.responses.kept import StoredResponses
from gateway.responses.services import ResponsesServices
from gateway.retrieval.services import RetrievalServices
from gateway.status.services import StatusServices
from gateway.sustainability.services import SustainabilityServices
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from gateway.upstream.usage import UsageLog, UsageSink
from gateway.workers.health_probes import Probes

# The families an extra gates, whose services and mounts are `gateway.app.gated`'s.
GATED = frozenset({"audio", "pipelines", "realtime", "files", "documents", "ocr"})

S = TypeVar("S")
# A family's endpoint function: (its services, principal, body, headers) -> its answer.
Served = Callable[[S, Principal, Any, Mapping[str, str]], Awaitable[JsonAnswer]]


def assemble(state: AppState, mounted: Collection[str]) -> None:
    """Build the core's services, with the hooks of the `mounted` families plugged in (a
    family that is not mounted costs the core nothing: none of its hooks is called), and
    the families' services, into `state`: those of the families an extra gates only when
    mounted (`GATED`), the others always."""
    _core_services(state, mounted)
    _serving_services(state)
    _status_services(state)
    _people_services(state)
    _reporting_services(state)
    if GATED & set(mounted):  # their code loads only then (`gateway.app.gated`)
        from gateway.app import gated

        gated.assemble(state, mounted)


def _core_services(state: AppState, mounted: Collection[str]) -> None:
    """The engine (its usage sinks and first-result observers those of the `mounted`
    families), admission (an agent's limits when agents are mounted), the authenticator
    and the health probes."""
    settings = state.settings
    observed = "operator" in mounted  # the metrics count records and first results
    state.engine = Engine(
        state.catalog,
        state.registry,
        state.breakers,
        state.health,
        state.limits.upstream,
        UsageLog(
            state.catalog,
            usage_sinks(state, mounted) if settings.usage_log_enabled else (),
            request_log=settings.request_log_days > 0 and "requestlog" in mounted,
        ),
        hedge_from_latency=settings.hedge_from_latency,
        shared_breakers=state.shared_breakers,
        on_first_result=(state.metrics.upstream_first_byte,) if observed else (),
        tracing=state.tracing,
    )
    state.admission = Admission(
        state.limiter if settings.rate_limits_enabled else None,
        policies=(AgentPolicy(state.agents),) if "agents" in mounted else (),
    )
    state.auth = Authenticator(state.keyring, state.db)
    state.probes = Probes(state.registry, state.health, settings)


def _serving_services(state: AppState) -> None:
    """The families that answer model requests: chat (and the request log's body sealer),
    retrieval, and responses in front of chat."""
    settings = state.settings
    state.chat = ChatServices(
        state.engine,
        state.admission,
        state.rules,
        state.cache,
        settings,
        state.db,
        state.auth,
        shared_cache=state.shared_cache,
        bodies=state.bodies,
    )
    if FILES.installed():  # without the PII detector no body is kept (never clear)
        state.usage.seal = body_sealer(state).seal
    state.retrieval = RetrievalServices(state.engine, state.admission, state.auth, settings)
    state.responses_services = ResponsesServices(
        chat_behind(state.chat),
        state.responses,
        state.db,
        state.engine.usage,
        state.auth,
        settings.responses_retention_days,
        state.background_responses,
    )


def _status_services(state: AppState) -> None:
    """Sustainability, the webhooks and the status page that sends through them."""
    settings = state.settings
    state.sustainability = SustainabilityServices(
        state.db, state.catalog, state.registry, state.auth
    )
    state.webhooks = Webhooks(state.db, state.cipher, settings, state.status)
    state.status_services = StatusServices(
        state.db,
        settings,
        state.catalog,
        state.registry,
        state.health,
        state.auth,
        state.webhooks,
    )


def _people_services(state: AppState) -> None:
    """Who may do what: the organisation (its workspaces' data included), the agents and
    the administration of keys, providers and limits."""
    settings = state.settings
    state.organization = OrganizationServices(
        state.db,
        settings,
        state.auth,
        state.keyring,
        state.logins,
        state.kdf_limiter,
        workspace_data=(
            state.files,
            state.documents,
            StoredResponses(state.responses, state.background_responses),
            LoggedRequests(),
        ),
        bodies=state.bodies,
    )
    state.agents_services = AgentsServices(
        state.db,
        settings,
        state.auth,
        state.keyring,
        state.agents,
        state.webhooks,
        redis=state.redis,
    )
    state.admin = AdminServices(
        state.db,
        settings,
        state.auth,
        state.keyring,
        state.catalog,
        state.registry,
        state.health,
        state.cipher,
        state.limiter,
        state.limits.upstream,
        state.usage.flush,
    )


def _reporting_services(state: AppState) -> None:
    """What was done: analytics, the operator's metrics and live view, the request log."""
    settings = state.settings
    state.analytics = AnalyticsServices(
        state.db,
        settings,
        state.auth,
        state.exports,
        state.registry,
        state.health,
        state.drain,
        state.usage.flush,
        lambda: queue_depth(state),
        live=state.shared_live,
    )
    live = LiveSources(
        state.usage,
        state.breakers,
        lambda: state.keyring.pending_last_used,
        lambda: len(state.cache),
        state.tracing,
    )
    state.operator = OperatorServices(
        state.db, settings, state.auth, state.metrics, live, state.usage.flush
    )
    state.request_log = RequestLogServices(
        state.auth, state.db, state.usage.flush, state.cipher, settings.request_log_days
    )


def chat_behind(chat: ChatServices) -> ServeChat:
    """Chat's path for the front doors that put another dialect in front of it."""

    def serve(
        principal: Principal, body: object, headers: Mapping[str, str], dialect: Dialect
    ) -> Answering:
        return serve_chat(chat, principal, body, headers, dialect)

    return serve


def endpoint(serve: Served[S], services: S) -> Endpoint:
    """A family's endpoint called in process, as `principal`, with a body."""

    async def call(principal: Principal, body: Mapping[str, Any]) -> Mapping[str, Any]:
        answer = await serve(services, principal, body, {})
        return cast(Mapping[str, Any], answer.body)

    return call


def queue_depth(state: AppState) -> int:
    """Requests of this process waiting for rate-limit capacity (strategy `queue`)."""
    shared = state.shared_limits
    return state.limits.waiting + (shared.waiting if shared is not None else 0)


def body_sealer(state: AppState) -> BodySealer:
    """The request log's bodies sealed by the PII detector, in its worker process, and
    the store's credential cipher."""
    redact = partial(pii_worker.run_scan, pii.redact_json, limiter=state.files.pii_scans)
    return BodySealer(state.cipher, redact)


def usage_sinks(state: AppState, mounted: Collection[str]) -> tuple[UsageSink, ...]:
    """Where each usage record goes: the writer (and with it the request log), and when
    their families are mounted the request's context and the metrics (the access log line
    and the request metrics name its provider, model, tokens and cost) and (several
    workers) the realtime counters every analytics page reads."""
    sinks: list[UsageSink] = [state.usage.submit]
    if "operator" in mounted:
        sinks[:0] = [note_usage, state.metrics.observe_usage]
    if state.shared_live is not None and "analytics" in mounted:
        sinks.append(state.shared_live.count)
    return tuple(sinks)
