"""Building the core's services once, and plugging the families' hooks into them.

The engine, admission and the authenticator are built here, in the composition root,
with what each needs; the hooks the core offers are filled from the families that are
mounted: the usage record's sinks (the usage log's writer; the metrics; the realtime
counters of several workers), the observers of each winning attempt (the metrics), and
the admission policies (an agent's limits). The core runs with none of them.
"""

from __future__ import annotations

import trio

from gateway.admin.services import AdminServices
from gateway.agents.policy import AgentPolicy
from gateway.agents.services import AgentsServices
from gateway.analytics.services import AnalyticsServices
from gateway.app.state import AppState
from gateway.chat.services import ChatServices
from gateway.kernels.webhooks.services import Webhooks
from gateway.ocr.services import OcrServices
from gateway.operator.live import LiveSources
from gateway.operator.services import OperatorServices
from gateway.organization.services import OrganizationServices
from gateway.platform.callers import Authenticator
from gateway.retrieval.services import RetrievalServices
from gateway.status.services import StatusServices
from gateway.sustainability.services import SustainabilityServices
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
        UsageLog(state.catalog, usage_sinks(state) if settings.usage_log_enabled else ()),
        hedge_from_latency=settings.hedge_from_latency,
        shared_breakers=state.shared_breakers,
        on_first_result=(state.metrics.upstream_first_byte,),
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
        state.db,
        state.auth,
        shared_cache=state.shared_cache,
    )
    state.retrieval = RetrievalServices(state.engine, state.admission, state.auth, settings)
    state.ocr = OcrServices(
        state.engine,
        state.admission,
        state.auth,
        settings,
        state.files.blobs,
        trio.CapacityLimiter(settings.ocr_page_concurrency),
    )
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
    state.organization = OrganizationServices(
        state.db,
        settings,
        state.auth,
        state.keyring,
        state.logins,
        state.kdf_limiter,
        workspace_data=(state.files, state.documents),
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
    )
    state.operator = OperatorServices(
        state.db, settings, state.auth, state.metrics, live, state.usage.flush
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


def queue_depth(state: AppState) -> int:
    """Requests of this process waiting for rate-limit capacity (strategy `queue`)."""
    shared = state.shared_limits
    return state.limits.waiting + (shared.waiting if shared is not None else 0)


def usage_sinks(state: AppState) -> tuple[UsageSink, ...]:
    """Where each usage record goes: the metrics, the writer, and (several workers) the
    realtime counters every worker's analytics page reads."""
    sinks: list[UsageSink] = [state.metrics.observe_usage, state.usage.submit]
    if state.shared_live is not None:
        sinks.append(state.shared_live.count)
    return tuple(sinks)
