"""The registry of families: what each one adds to the gateway, in one table.

The composition root is the only place that knows every family. Each entry's `mount`
builds the family's few services from what the root built and returns what the family
adds: Quart blueprints, routes of the plain-ASGI fast path (streamed answers whose start
can fail), and the upload limits of its routes whose bodies are larger than a JSON body.
A new family is one entry here (docs/architecture.md, "Adding a family"). One whose
packages are heavy says what it `requires` (`gateway.platform.extras.Requires`): where
an extra is missing it is not mounted (`gateway.app.extras`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial

import attrs
import trio
from quart import Blueprint

from gateway.admin.health import health_blueprint
from gateway.admin.keys import keys_blueprint
from gateway.admin.models import models_blueprint
from gateway.admin.provider_routes import providers_blueprint
from gateway.admin.rate_limits import rate_limits_blueprint
from gateway.agents import agent_alerts, agent_counters, agent_events
from gateway.agents.mcp_routes import mcp_blueprint
from gateway.agents.routes import agents_blueprint
from gateway.analytics import export_worker
from gateway.analytics.live import live_worker
from gateway.analytics.routes import analytics_blueprint
from gateway.app.assembly import chat_behind
from gateway.app.state import AppState
from gateway.chat.routes import chat_routes
from gateway.chat.rule_routes import routing_rules_blueprint
from gateway.messages.routes import messages_routes
from gateway.messages.services import MessagesServices
from gateway.operator.console_routes import console_blueprint
from gateway.operator.metrics_routes import metrics_blueprint
from gateway.operator.openapi_routes import openapi_blueprint
from gateway.organization.audit_routes import audit_log_blueprint
from gateway.organization.routes import organization_blueprint
from gateway.organization.token_routes import auth_tokens_blueprint
from gateway.platform.asgi import Route
from gateway.platform.extras import AUDIO, FILES, Requires
from gateway.requestlog import retention as request_log_retention
from gateway.requestlog.routes import request_log_blueprint
from gateway.responses import retention as response_retention
from gateway.responses.routes import responses_blueprint, responses_routes
from gateway.retrieval.routes import retrieval_blueprints
from gateway.status import alert_evaluator, incident_monitor
from gateway.status.alert_routes import alerts_blueprint
from gateway.status.billing_routes import billing_blueprint
from gateway.status.routes import status_blueprint
from gateway.sustainability.routes import sustainability_blueprint

SPEECH_MODELS = ("speech", "transcription")  # the catalog's model types the audio family serves

# A long-lived task of the family: started with `nursery.start(worker)` by the server's
# lifespan, it reports readiness through `task_status` and runs until cancelled.
Worker = Callable[..., Awaitable[None]]


async def ready_at_once(
    serve: Callable[[], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`serve` as a worker that is ready at once."""
    task_status.started()
    await serve()


@attrs.frozen
class Mounted:
    """What one family adds to the gateway."""

    blueprints: tuple[Blueprint, ...] = ()
    routes: tuple[Route, ...] = ()  # served by the fast path, before Quart
    upload_limits: Mapping[str, int] = attrs.field(factory=dict)  # POST path -> bytes
    workers: tuple[Worker, ...] = ()


@attrs.frozen
class Family:
    name: str
    mount: Callable[[AppState], Mounted]
    requires: Requires | None = None  # extras it needs (None: the core's)


def _chat(state: AppState) -> Mounted:
    chat = state.chat
    workers: tuple[Worker, ...] = ()
    if chat.shared_cache is not None:  # several workers: answers go to the shared server
        workers = (partial(ready_at_once, chat.shared_cache.writer),)
    return Mounted((routing_rules_blueprint(chat),), tuple(chat_routes(chat)), workers=workers)


def _responses(state: AppState) -> Mounted:
    responses = state.responses_services
    interval = state.settings.retention_check_interval_s
    return Mounted(
        (responses_blueprint(responses),),
        tuple(responses_routes(responses)),
        workers=(
            partial(response_retention.run, responses, interval),
            responses.background.run,  # background responses (gateway.app.server.prepare_store
            # marks a stopped gateway's unfinished ones failed first)
        ),
    )


def _messages(state: AppState) -> Mounted:
    messages = MessagesServices(chat_behind(state.chat), state.catalog)  # chat's path
    return Mounted(routes=tuple(messages_routes(messages)))


def _retrieval(state: AppState) -> Mounted:
    return Mounted(retrieval_blueprints(state.retrieval))


def _status(state: AppState) -> Mounted:
    svc = state.status_services
    return Mounted(
        (status_blueprint(svc), alerts_blueprint(svc), billing_blueprint(svc)),
        workers=(partial(incident_monitor.run, svc), partial(alert_evaluator.run, svc)),
    )


def _agents(state: AppState) -> Mounted:
    agents = state.agents_services
    return Mounted(
        (agents_blueprint(agents), mcp_blueprint(agents)),
        workers=(
            partial(agent_alerts.run, agents),  # limit-warning webhooks
            partial(agent_events.run, agents),  # agent and organisation-limit changes
            partial(agent_counters.run, agents),  # settlements and leases of shared budgets
        ),
    )


def _analytics(state: AppState) -> Mounted:
    analytics = state.analytics
    workers: tuple[Worker, ...] = (partial(export_worker.run, analytics),)
    if analytics.live is not None:  # several workers: the realtime counters they share
        workers += (partial(live_worker, analytics.live, analytics.gauges),)
    return Mounted((analytics_blueprint(analytics),), workers=workers)


def _admin(state: AppState) -> Mounted:
    admin = state.admin
    return Mounted(
        (
            health_blueprint(admin),
            models_blueprint(admin),
            keys_blueprint(admin),
            providers_blueprint(admin),
            rate_limits_blueprint(admin),
        )
    )


def _organization(state: AppState) -> Mounted:
    services = state.organization
    return Mounted(
        (
            organization_blueprint(services),
            audit_log_blueprint(services),
            auth_tokens_blueprint(services),
        )
    )


def _operator(state: AppState) -> Mounted:
    operator = state.operator
    return Mounted((metrics_blueprint(operator), openapi_blueprint(), console_blueprint(operator)))


def _request_log(state: AppState) -> Mounted:
    services, interval = state.request_log, state.settings.retention_check_interval_s
    return Mounted(
        (request_log_blueprint(services),),
        workers=(partial(request_log_retention.run, services, interval),),
    )


def gated(name: str) -> Callable[[AppState], Mounted]:
    """The mount of family `name` of `gateway.app.gated`, which that module is imported
    for on its first call: a core install, which mounts none of them, never loads their
    code."""

    def mount(state: AppState) -> Mounted:
        from gateway.app import gated as families

        return families.MOUNTS[name](state)

    return mount


_AUDIO_PATHS = (
    "/v1/audio/speech",
    "/v1/audio/transcriptions",
    "/v1/audio/translations",
    "/v1/audio/voices",
    "/v1/management/voice-mappings",
)
_PIPELINE_PATHS = ("/v1/audio/pipelines", "/v1/management/pipeline-templates")
_REALTIME_PATHS = ("/v1/realtime", "/v1/audio/sessions")

FAMILIES: tuple[Family, ...] = (
    Family("admin", _admin),
    Family("chat", _chat),
    Family("responses", _responses),  # front doors over chat (gateway.kernels.dialects)
    Family("messages", _messages),
    Family("retrieval", _retrieval),
    Family(
        "audio",
        gated("audio"),
        Requires((AUDIO,), "Speech, transcription and voices", _AUDIO_PATHS, SPEECH_MODELS),
    ),
    Family("status", _status),
    Family("organization", _organization),
    Family("operator", _operator),
    Family("documents", gated("documents"), Requires((FILES,), "Data documents", ("/v1/data",))),
    Family("files", gated("files"), Requires((FILES,), "Files", ("/v1/files",))),
    Family(
        "ocr",
        gated("ocr"),
        Requires((FILES,), "OCR", ("/v1/ocr",), ("ocr",)),
    ),
    Family(
        "sustainability", lambda state: Mounted((sustainability_blueprint(state.sustainability),))
    ),
    Family("agents", _agents),
    Family("pipelines", gated("pipelines"), Requires((AUDIO,), "Voice pipelines", _PIPELINE_PATHS)),
    Family(
        "realtime",
        gated("realtime"),
        Requires((AUDIO,), "Realtime and voice sessions", _REALTIME_PATHS, ("realtime",)),
    ),
    Family("analytics", _analytics),
    Family("requestlog", _request_log),
)
