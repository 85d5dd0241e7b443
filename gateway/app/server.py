"""Running the gateway: the app's lifespan as one trio nursery that owns everything.

`run_gateway` opens the store and the upstream connection pool, starts the background
workers (`core_workers`, then the mounted families'; in `--demo` also the simulators), then serves
HTTP with Hypercorn until the shutdown trigger fires or it is cancelled. On the way out
Hypercorn lets in-flight requests finish (up to the grace period), the usage log is
flushed, and the database is closed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
import httpx
import trio
from hypercorn.config import Config as HypercornConfig

from gateway.app import bootstrap
from gateway.app.assembly import assemble
from gateway.app.extras import available, mount_all, offered
from gateway.app.factory import create_app
from gateway.app.families import Mounted, Worker
from gateway.app.scaleout import open_shared
from gateway.app.state import AppState
from gateway.chat.cache import ResponseCache
from gateway.operator.middleware import ObservedApp
from gateway.operator.pauses import PauseTracer
from gateway.platform.asgi import FastPath
from gateway.platform.auth import KeyRing
from gateway.platform.config import Settings
from gateway.platform.connections import ConnectionLimits
from gateway.platform.doc_links import DocLinks
from gateway.platform.drain import HYPERCORN_MARGIN_S
from gateway.platform.errors import doc_base
from gateway.platform.listen import LISTEN_BACKLOG, serve_http
from gateway.platform.tracing import Tracing
from gateway.platform.upload_pace import UploadFloor
from gateway.upstream.registry import ProviderRegistry
from gateway.upstream.routing.book import RuleBook
from gateway.workers import (
    health_probes,
    key_events,
    last_used,
    shared_limits,
    shared_state,
    store_events,
    trace_export,
    usage_writer,
    webhook_delivery,
)
from gateway.workers.key_events import KeySync
from gateway.workers.store_events import StoreSync
from gateway.workers.usage_writer import usage_writer_for
from providers.adapters import builtin_adapters
from providers.catalog import load_catalog
from providers.upstream import HttpxUpstream, LeanUpstream, Upstream
from providers.upstream.guard import upstream_policy
from providers.upstream.httpx_upstream import guarded_transport
from store import keys, request_log
from store import providers as provider_store
from store import rules as rule_store
from store.db import open_database
from store.secrets import load_or_create_cipher

if TYPE_CHECKING:  # the simulators run in `--demo` only, and load then
    from providers.sim.server import SimServer

ShutdownTrigger = Callable[[], Awaitable[None]]


def core_workers(state: AppState) -> list[Worker]:
    """The core's long-lived workers, started in this order by the lifespan nursery before
    the families' own (`Mounted.workers`): the usage log first, since the others may
    record usage."""
    settings = state.settings
    return [
        partial(usage_writer.run, state.usage),
        partial(last_used.run, state.keyring, state.db),
        partial(health_probes.run, state.probes),
        partial(webhook_delivery.run, state.webhooks),
        partial(shared_state.run, state.shared_breakers, state.breakers),
        # Scale-out: settlements and leases of the shared limits, key revocations, and
        # providers, rules and vector indexes changed by another node (a shared store).
        partial(shared_limits.run, state.shared_limits),
        partial(key_events.run, KeySync(state.keyring, state.db, settings, state.redis)),
        partial(store_events.run, store_sync(state)),
        partial(trace_export.run, state.tracing),  # spans to the OTLP endpoint, when on
    ]


def store_sync(state: AppState) -> StoreSync:
    indexes = {"files": state.files.index, "documents": state.documents.index}
    return StoreSync(
        state.db, state.settings, state.redis, state.registry, state.rules, indexes, state.bodies
    )


@attrs.frozen
class RunningGateway:
    """What a started gateway reports: where it listens and what it made."""

    url: str
    state: AppState
    sim: SimServer | None
    printed_admin_key: str | None
    providers: tuple[str, ...]
    http: FastPath | None = None  # the HTTP app inside the observers (None: a supervisor)


def upstream_client(settings: Settings) -> Upstream:
    """The one pooled client every adapter shares, as `settings.upstream_client` says,
    its every new connection held to the operator's address policy for providers.

    Reads have no timeout of their own because the callers set deadlines (first chunk,
    idle gap, whole call); only connecting has one.
    """
    policy = upstream_policy(settings.upstream_private_addresses, settings.upstream_allowed_hosts)
    if settings.upstream_client == "httpx":
        limits = httpx.Limits(
            max_connections=settings.max_upstream_connections,
            max_keepalive_connections=settings.max_keepalive_connections,
            keepalive_expiry=30.0,
        )
        client = httpx.AsyncClient(
            transport=guarded_transport(policy, limits),
            timeout=httpx.Timeout(
                connect=settings.connect_timeout_s, read=None, write=30.0, pool=30.0
            ),
            follow_redirects=False,
            trust_env=False,
        )
        return HttpxUpstream(client, policy)
    return LeanUpstream(
        connect_timeout=settings.connect_timeout_s,
        max_connections_per_host=settings.max_upstream_connections,
        max_idle_per_host=settings.max_keepalive_connections,
        keepalive_expiry=30.0,
        address_policy=policy,
    )


@asynccontextmanager
async def open_state(settings: Settings, env: Mapping[str, str]) -> AsyncIterator[AppState]:
    """The shared state, open for the duration of the block."""
    db = await trio.to_thread.run_sync(open_database, settings.data_dir, settings.database_url)
    try:
        cipher = load_or_create_cipher(settings.data_dir, env)
        catalog = offered(load_catalog().with_passthrough(settings.passthrough_models))
        # Every upstream call carries its request's trace context (`upstream.traced`).
        async with aclosing(upstream_client(settings)) as client:
            keyring = KeyRing()
            keyring.load(await db.run(keys.all_active))
            registry = ProviderRegistry(client, cipher, catalog, builtin=builtin_adapters(client))
            registry.load(await db.run(provider_store.list_all))
            usage = usage_writer_for(settings, db)  # issue 23: process or thread
            cache = ResponseCache(
                max_entries=settings.cache_max_entries, max_bytes=settings.cache_max_bytes
            )
            rules = RuleBook()
            rules.load(await db.run(rule_store.all_enabled))
            async with open_shared(settings, db, usage) as shared:
                state = AppState(
                    settings,
                    db,
                    cipher,
                    catalog,
                    client,
                    keyring,
                    registry,
                    usage,
                    cache=cache,
                    rules=rules,
                    redis=shared.client,
                    shared_limits=shared.limits,
                    shared_cache=shared.cache,
                    shared_breakers=shared.breakers,
                    shared_live=shared.live,
                    tracing=Tracing.of(settings),
                )
                state.bodies.load(await db.run(request_log.keeps_bodies))
                assemble(state, [family.name for family in available()])
                yield state
    finally:
        db.close()


def hypercorn_config(settings: Settings, host: str, port: int) -> HypercornConfig:
    config = HypercornConfig()
    config.bind = [f"{host}:{port}"]
    # Past the grace period the drain answers what is left (503 or an error event);
    # Hypercorn's own deadline, which drops connections, comes a little later.
    config.graceful_timeout = settings.shutdown_grace_s + HYPERCORN_MARGIN_S
    config.keep_alive_timeout = settings.keep_alive_timeout_s
    config.h11_max_incomplete_size = settings.max_header_bytes
    config.backlog = LISTEN_BACKLOG
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handlers, once
    return config


async def run_gateway(
    settings: Settings,
    *,
    env: Mapping[str, str] | None = None,
    shutdown_trigger: ShutdownTrigger | None = None,
    listen_fd: int | None = None,
    task_status: trio.TaskStatus[RunningGateway] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until `shutdown_trigger` returns (graceful) or the caller cancels.

    Reports a `RunningGateway` through `task_status` once the port is bound. With
    `listen_fd` (a worker of `gateway serve --workers N`, see
    `gateway.app.supervisor`) it serves the supervisor's listening socket, and the
    admin key and providers, made once by the supervisor, are only read from the store.
    """
    env = os.environ if env is None else env
    async with (
        open_state(settings, env) as state,
        _traced(state) as tracer,
        trio.open_nursery() as nursery,
    ):
        if settings.trace_pauses:
            state.usage.on_batch = tracer.note_usage_batch
            nursery.start_soon(tracer.watch_loop)
        await _serve_in(nursery, state, settings, env, shutdown_trigger, listen_fd, task_status)


@asynccontextmanager
async def _traced(state: AppState) -> AsyncIterator[PauseTracer]:
    """Collections and loop stalls timed while the gateway runs (`gateway.operator.pauses`)."""
    settings = state.settings
    tracer = PauseTracer(
        state.metrics, trace=settings.trace_pauses, threshold_ms=settings.trace_threshold_ms
    )
    tracer.install()
    try:
        yield tracer
    finally:
        tracer.uninstall()


async def _serve_in(
    nursery: trio.Nursery,
    state: AppState,
    settings: Settings,
    env: Mapping[str, str],
    shutdown_trigger: ShutdownTrigger | None,
    listen_fd: int | None,
    task_status: trio.TaskStatus[RunningGateway],
) -> None:
    """Start the workers, the providers and the HTTP server in `nursery`. A worker of
    `--workers N` (`listen_fd` set) only reads the admin key and providers the supervisor
    made."""
    mounted = mount_all(state)
    for worker in [*core_workers(state), *(w for family in mounted for w in family.workers)]:
        await nursery.start(worker)
    printed_key: str | None = None
    sim: SimServer | None = None
    configured: list[str] = []
    if listen_fd is None:  # one process: what a supervisor does once before its workers
        printed_key, sim, configured = await prepare_store(state, settings, env, nursery)
    fast = http_app(state, mounted)
    links = DocLinks(fast, settings.public_base_url)  # the base of each error's doc_url
    app = ObservedApp(
        links, state.metrics, log_bodies=settings.log_request_bodies, tracing=state.tracing
    )
    config = hypercorn_config(settings, settings.host, settings.port)
    if listen_fd is not None:
        config.bind = [f"fd://{listen_fd}"]
    trigger = _draining(fast, shutdown_trigger or trio.sleep_forever, settings.shutdown_grace_s)
    limits = ConnectionLimits.of(settings)
    # What the server answers on its own (a malformed request, the connection cap) has no
    # request to take a base from: its doc_url has the public base, else the path alone.
    doc_base.set(settings.public_base_url or "")  # inherited by the server's tasks
    binds = await nursery.start(_serve_then_stop, app, config, limits, trigger, nursery)
    running = RunningGateway(binds[0], state, sim, printed_key, tuple(configured), http=fast)
    task_status.started(running)


def http_app(state: AppState, mounted: Sequence[Mounted]) -> FastPath:
    """The mounted families as one ASGI app: their fast-path routes in front of Quart."""
    settings = state.settings
    return FastPath(
        create_app(settings, mounted),
        [route for family in mounted for route in family.routes],
        authenticator=state.auth,
        drain=state.drain,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_s=settings.body_timeout_s,
        floor=UploadFloor(settings.min_upload_rate_bytes_s, settings.upload_rate_grace_s),
    )


def _draining(app: FastPath, trigger: ShutdownTrigger, grace_s: float) -> ShutdownTrigger:
    """`trigger`, then the drain's deadline: requests still running `grace_s` after the
    shutdown began are answered with a clean error (`gateway.platform.drain`)."""

    async def triggered() -> None:
        await trigger()
        app.drain.close_at(trio.current_time() + grace_s)

    return triggered


async def _serve_then_stop(
    app: Any,
    config: HypercornConfig,
    limits: ConnectionLimits,
    shutdown_trigger: ShutdownTrigger,
    nursery: trio.Nursery,
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve HTTP (`gateway.platform.listen`: no connection can end the process); once
    the server has shut down gracefully, stop the background workers (their cancellation
    flushes the usage log)."""
    await serve_http(
        app, config, limits, shutdown_trigger=shutdown_trigger, task_status=task_status
    )
    nursery.cancel_scope.cancel()


async def prepare_store(
    state: AppState, settings: Settings, env: Mapping[str, str], nursery: trio.Nursery
) -> tuple[str | None, SimServer | None, list[str]]:
    """What runs once before the workers of `--workers N` start (the supervisor's part of
    `run_gateway`): the admin key, the providers (the simulators in `nursery`), and the
    background responses a stopped gateway left unfinished marked failed."""
    printed_key = await bootstrap.ensure_admin_key(state, settings.admin_key)
    await state.background_responses.sweep()
    sim, configured = await _providers(state, settings, env, nursery)
    return printed_key, sim, configured


async def _providers(
    state: AppState, settings: Settings, env: Mapping[str, str], nursery: trio.Nursery
) -> tuple[SimServer | None, list[str]]:
    if not settings.demo:
        return None, await bootstrap.configure_env_providers(state, env)
    from providers.sim.server import SimConfig, serve_simulator

    sim_config = SimConfig(
        ttft_ms=settings.sim_ttft_ms, tokens_per_second=settings.sim_tokens_per_second
    )
    sim: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, sim_config)
    urls = {info.id: sim.base_url(info.id) for info in state.catalog.providers()}
    return sim, await bootstrap.configure_demo_providers(state, urls)
