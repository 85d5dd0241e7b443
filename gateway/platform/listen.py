"""Serving HTTP: Hypercorn's trio worker loop, with our handler for each connection.

Hypercorn's `serve` builds its `TCPServer` for each accepted connection and runs it in the
server's nursery, with no way to put anything around it; an exception from one connection
then ends the server (issue 31). `serve_http` is that loop (`hypercorn.trio.run.
worker_serve`, checked against Hypercorn 0.18.0; plain sockets, no TLS or QUIC: TLS ends at
the proxy in front) whose handler counts the connection against the cap
(`gateway.platform.connections.ConnectionGate`) and serves it as a `GuardedConnection`,
which never lets an exception out.
"""

from __future__ import annotations

import logging
import resource
from collections.abc import Awaitable, Callable
from contextlib import suppress
from functools import partial
from typing import Any

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.statsd import StatsdLogger
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, LifespanState
from hypercorn.utils import ShutdownError, raise_shutdown, repr_socket_addr, wrap_app

from gateway.platform.connections import (
    ConnectionGate,
    ConnectionLimits,
    GuardedConnection,
    refuse,
)

logger = logging.getLogger(__name__)

ShutdownTrigger = Callable[[], Awaitable[None]]
# Descriptors kept for the process itself (database, logs, files, the usage writer, the
# listening sockets); of the rest, each client connection may need one for its upstream.
RESERVED_DESCRIPTORS = 128
# Connections the kernel completes and queues before the server accepts them (Hypercorn's
# default is 100: a burst past it has its handshakes dropped and retried for seconds).
LISTEN_BACKLOG = 1024
# The automatic cap when the process may open any number of files.
UNLIMITED_FILES_CAP = 100_000


async def serve_http(
    app: Any,
    config: Config,
    limits: ConnectionLimits,
    *,
    shutdown_trigger: ShutdownTrigger,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the ASGI `app` on `config`'s binds until `shutdown_trigger` returns, then
    shut down as Hypercorn does: idle connections close, requests in flight get
    `config.graceful_timeout`. Reports the bound addresses through `task_status`."""
    if config.ssl_enabled:
        raise ValueError("serve_http serves plain HTTP; terminate TLS in front of it")
    limits = attrs.evolve(limits, max_connections=affordable_connections(limits))
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    config.set_statsd_logger_class(StatsdLogger)
    lifespan_state: LifespanState = {}
    lifespan = Lifespan(wrapped, config, lifespan_state)
    context = WorkerContext(None)
    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        async with trio.open_nursery() as server_nursery:
            listeners, binds = _listen(config)
            gate = ConnectionGate(limits)
            handler = partial(
                _serve_connection, wrapped, config, context, lifespan_state, limits, gate
            )
            task_status.started(binds)
            try:
                await _accept_until_shutdown(
                    handler, listeners, server_nursery, context, shutdown_trigger
                )
            finally:
                await context.terminated.set()
                server_nursery.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()


async def _accept_until_shutdown(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    listeners: list[trio.SocketListener],
    server_nursery: trio.Nursery,
    context: WorkerContext,
    shutdown_trigger: ShutdownTrigger,
) -> None:
    """Accept connections into `server_nursery` until `shutdown_trigger` returns (or
    Hypercorn's own terminate event is set)."""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(raise_shutdown, shutdown_trigger)
            nursery.start_soon(raise_shutdown, context.terminate.wait)
            nursery.start_soon(
                partial(trio.serve_listeners, handler, listeners, handler_nursery=server_nursery)
            )
            await trio.sleep_forever()
    except BaseExceptionGroup as error:
        _, others = error.split((ShutdownError, KeyboardInterrupt))
        if others is not None:
            raise others from None


def _listen(config: Config) -> tuple[list[trio.SocketListener], list[str]]:
    sockets = config.create_sockets()
    listeners: list[trio.SocketListener] = []
    binds: list[str] = []
    for sock in sockets.insecure_sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")
    return listeners, binds


async def _serve_connection(
    app: AppWrapper,
    config: Config,
    context: WorkerContext,
    lifespan_state: LifespanState,
    limits: ConnectionLimits,
    gate: ConnectionGate,
    stream: trio.SocketStream,
) -> None:
    """One accepted connection: refused past the cap, else served; never raises."""
    try:
        address = str(stream.socket.getpeername()[0])
    except OSError:  # gone already
        await stream.aclose()
        return
    refusal = gate.refusal(address)
    if refusal is not None:
        await refuse(stream, refusal, gate)
        return
    with gate.held(address):
        await GuardedConnection(app, config, context, lifespan_state, stream, limits).run()


def affordable_connections(limits: ConnectionLimits) -> int:
    """The connection cap: `limits.max_connections`, or what the descriptor limit affords
    when that is 0 or more than it affords (half the descriptors beyond a reserve: each
    client connection may need a second one for its upstream).

    The soft limit on open files is raised to the hard one first (as Go's runtime does):
    a distribution's default soft limit (often 1,024) is far below what a server needs.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if resource.RLIM_INFINITY not in (soft, hard) and hard > soft:
        with suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    wanted = limits.max_connections
    if soft == resource.RLIM_INFINITY:
        return wanted or UNLIMITED_FILES_CAP
    affordable = max(1, (soft - RESERVED_DESCRIPTORS) // 2)
    if wanted > affordable:
        logger.warning(
            "max_connections lowered from %d to %d: the process may open %d files",
            wanted,
            affordable,
            soft,
        )
    return min(wanted, affordable) if wanted else affordable
