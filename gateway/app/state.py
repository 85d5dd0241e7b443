"""Everything the composition root built, in one object that only the root sees whole.

The root (`gateway.app.assembly`) builds the core's services (the engine, admission, the
authenticator) and each family's services class into it; a family receives its own
services class, never this. The tests read it through `RunningGateway.state`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import trio

from gateway.admin.services import AdminServices
from gateway.agents.book import AgentBook
from gateway.agents.counters import MemoryCounters
from gateway.agents.services import AgentsServices
from gateway.agents.shared import shared_agent_counters
from gateway.analytics.live import SharedRealtime
from gateway.analytics.runtime import ExportRuntime
from gateway.analytics.services import AnalyticsServices
from gateway.chat.cache import ResponseCache
from gateway.chat.cache.shared import SharedResponseCache
from gateway.chat.services import ChatServices
from gateway.documents.runtime import DocumentsRuntime
from gateway.files.runtime import FilesRuntime
from gateway.kernels.webhooks.hub import StatusHub
from gateway.kernels.webhooks.services import Webhooks
from gateway.operator.metrics import GatewayMetrics
from gateway.operator.services import OperatorServices
from gateway.organization.services import OrganizationServices
from gateway.organization.throttle import LoginThrottle
from gateway.platform.auth import KeyRing
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.platform.drain import Drain
from gateway.platform.resp import RedisClient
from gateway.platform.tracing import Tracing
from gateway.requestlog.services import RequestLogServices
from gateway.responses.background_runs import BackgroundResponses
from gateway.responses.services import ResponsesServices
from gateway.retrieval.services import RetrievalServices
from gateway.status.services import StatusServices
from gateway.sustainability.services import SustainabilityServices
from gateway.upstream.admission import Admission
from gateway.upstream.bodies import BodyKeepers
from gateway.upstream.circuit import BreakerBook
from gateway.upstream.engine import Engine
from gateway.upstream.health import HealthBook
from gateway.upstream.limits import LimitBackend, RateLimiter, store_count_loader
from gateway.upstream.limits.shared import SharedLimiter
from gateway.upstream.registry import ProviderRegistry
from gateway.upstream.routing.book import RuleBook
from gateway.upstream.shared_breakers import SharedBreakers
from gateway.workers.health_probes import Probes
from gateway.workers.usage_writer import UsageWriter
from providers.catalog import Catalog
from providers.upstream import Upstream
from store.db import Database
from store.responses import ResponseKeeper
from store.secrets import CredentialCipher

if TYPE_CHECKING:  # built only where mounted (`gateway.app.gated`)
    from gateway.audio.mapping_book import VoiceMappingBook
    from gateway.audio.services import AudioServices
    from gateway.documents.services import DocumentsServices
    from gateway.files.services import FilesServices
    from gateway.ocr.services import OcrServices
    from gateway.pipelines.services import PipelinesServices


@attrs.define(eq=False)
class AppState:
    settings: Settings
    db: Database
    cipher: CredentialCipher
    catalog: Catalog
    client: Upstream
    keyring: KeyRing
    registry: ProviderRegistry
    usage: UsageWriter
    health: HealthBook = attrs.field(factory=HealthBook)
    breakers: BreakerBook = attrs.field(factory=BreakerBook)
    cache: ResponseCache = attrs.field(factory=ResponseCache)
    rules: RuleBook = attrs.field(factory=RuleBook)
    status: StatusHub = attrs.field(factory=StatusHub)
    logins: LoginThrottle = attrs.field(factory=LoginThrottle)
    # Password hashing is CPU and 64 MiB per call: two at a time at most.
    kdf_limiter: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(2))
    metrics: GatewayMetrics = attrs.field(factory=GatewayMetrics)
    limits: RateLimiter = attrs.field()
    files: FilesRuntime = attrs.field()
    documents: DocumentsRuntime = attrs.field()
    agents: AgentBook = attrs.field()
    # Requests in flight (the server's drain), read by the analytics realtime page.
    drain: Drain = attrs.field(factory=Drain)
    exports: ExportRuntime = attrs.field()
    # Stored responses of the Responses API, written behind their answers.
    responses: ResponseKeeper = attrs.field()
    # Background responses (`background: true`) running in this process.
    background_responses: BackgroundResponses = attrs.field()
    # Scale-out: the Redis-protocol server and the limits kept on it (None: one process,
    # limits in memory).
    redis: RedisClient | None = None
    shared_limits: SharedLimiter | None = None
    # The same server holds the response cache, the breakers' transitions and the
    # realtime counters (None: per process). The hot path checks these attributes only.
    shared_cache: SharedResponseCache | None = None
    shared_breakers: SharedBreakers | None = None
    shared_live: SharedRealtime | None = None
    # OpenTelemetry spans (`gateway.platform.tracing`); None when no OTLP endpoint is set,
    # and then no span is made anywhere.
    tracing: Tracing | None = None
    # The workspaces whose request log keeps bodies (loaded at start, changed by PATCH).
    bodies: BodyKeepers = attrs.field(factory=BodyKeepers)
    # Built by the composition root (`gateway.app.assembly.assemble`).
    engine: Engine = attrs.field(init=False)
    admission: Admission = attrs.field(init=False)
    auth: Authenticator = attrs.field(init=False)
    chat: ChatServices = attrs.field(init=False)
    retrieval: RetrievalServices = attrs.field(init=False)
    ocr: OcrServices = attrs.field(init=False)
    sustainability: SustainabilityServices = attrs.field(init=False)
    webhooks: Webhooks = attrs.field(init=False)
    status_services: StatusServices = attrs.field(init=False)
    organization: OrganizationServices = attrs.field(init=False)
    admin: AdminServices = attrs.field(init=False)
    agents_services: AgentsServices = attrs.field(init=False)
    analytics: AnalyticsServices = attrs.field(init=False)
    operator: OperatorServices = attrs.field(init=False)
    audio: AudioServices = attrs.field(init=False)
    # Audio: workspaces' voice mappings by name, so speech asks no store before its audio.
    voice_mappings: VoiceMappingBook = attrs.field(init=False)
    files_services: FilesServices = attrs.field(init=False)
    documents_services: DocumentsServices = attrs.field(init=False)
    probes: Probes = attrs.field(init=False)
    responses_services: ResponsesServices = attrs.field(init=False)
    pipelines: PipelinesServices = attrs.field(init=False)
    request_log: RequestLogServices = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # Agents (issue 18): with a Redis-protocol server their counters live there too.
        if self.redis is not None and self.agents.shared is None:
            self.agents.shared = shared_agent_counters(self.settings, self.redis, self.agents)

    @property
    def limiter(self) -> LimitBackend:
        """The limits backend admission uses: shared when configured, else in memory."""
        return self.limits if self.shared_limits is None else self.shared_limits

    @limits.default
    def _default_limits(self) -> RateLimiter:
        return RateLimiter(count_loader=store_count_loader(self.db, self.usage.flush))

    @agents.default
    def _default_agents(self) -> AgentBook:
        counters = MemoryCounters(idle_s=self.settings.agent_session_idle_s)
        return AgentBook(self.db, self.usage.flush, counters)

    @responses.default
    def _default_responses(self) -> ResponseKeeper:
        return ResponseKeeper(self.db, self.usage)  # written by the usage writer's batches

    @background_responses.default
    def _default_background_responses(self) -> BackgroundResponses:
        settings = self.settings
        return BackgroundResponses(
            self.responses,
            self.db,
            limit=settings.background_responses_max,
            per_workspace=settings.background_responses_per_workspace,
            timeout_s=settings.background_response_timeout_s,
            events_max_bytes=settings.background_events_max_bytes,
        )

    @exports.default
    def _default_exports(self) -> ExportRuntime:
        return ExportRuntime.under(self.settings.blob_root)

    @files.default
    def _default_files(self) -> FilesRuntime:
        settings = self.settings
        return FilesRuntime.under(
            settings.blob_root, shared=settings.blobs_shared, queue_size=settings.file_queue_size
        )

    @documents.default
    def _default_documents(self) -> DocumentsRuntime:
        settings = self.settings
        return DocumentsRuntime.under(
            settings.blob_root,
            shared=settings.blobs_shared,
            queue_size=settings.document_queue_size,
        )
