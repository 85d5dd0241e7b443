"""`gateway serve --workers N`: N worker processes serving one port, supervised by one.

Why our own supervisor rather than Hypercorn's multi-worker mode: our app is built by
a lifespan (`run_gateway`) that owns the store, the workers and the simulators, and the
store needs things done exactly once before any worker serves: migrations, the admin-key
bootstrap (which may print a new key), the providers from the environment or `--demo`.
The supervisor does those in its own process, then binds the listening socket and starts
N children (`gateway serve ... --worker-fd FD`) that inherit the socket and accept on it
(the kernel hands each connection to one of them). Each child is a whole gateway with its
own store connection and usage writer (SQLite in WAL mode with a busy timeout), its
limits and key changes shared through Redis (required: `check_workers`).

Children run in their own process group, so a terminal's Ctrl-C (sent to the
foreground group) reaches the supervisor alone; it then sends each child one SIGTERM (a
graceful shutdown: in-flight requests finish within the grace period) and waits for
them, killing one that outlives the grace period. A child that exits on its own is
started again after `RESTART_DELAY_S`. Not a session of their own: Linux gives each
session a scheduler group (autogroup), and a worker alone in its group waited for the
CPU at each wake-up on a loaded machine (its p50 at concurrency 1 two to three times a
single worker's, docs/scale-out.md). In `--demo` the simulators run in the supervisor,
which points the providers at them once.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial

import trio

from gateway.app.server import RunningGateway, open_state, prepare_store
from gateway.platform.config import Settings
from gateway.platform.drain import HYPERCORN_MARGIN_S
from gateway.platform.listen import LISTEN_BACKLOG

logger = logging.getLogger(__name__)

RESTART_DELAY_S = 1.0
KILL_MARGIN_S = 5.0


def listening_socket(host: str, port: int) -> socket.socket:
    """The socket every worker accepts on (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def worker_command(argv: Sequence[str], fd: int) -> list[str]:
    """A child's command line: the supervisor's own `serve` arguments, plus the socket."""
    return [sys.executable, "-m", "gateway", *argv, "--worker-fd", str(fd)]


async def supervise(
    settings: Settings,
    argv: Sequence[str],
    env: Mapping[str, str],
    shutdown_trigger: Callable[[], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[RunningGateway] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Prepare the store once, start `settings.workers` children on one socket, and run
    until `shutdown_trigger` returns; then stop the children gracefully. Reports a
    `RunningGateway` (the shared URL, the supervisor's own state) once they start."""
    async with open_state(settings, env) as state, trio.open_nursery() as nursery:
        printed_key, sim, configured = await prepare_store(state, settings, env, nursery)
        with listening_socket(settings.host, settings.port) as sock:
            host, port = sock.getsockname()[:2]
            url = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
            command = worker_command(argv, sock.fileno())
            grace = settings.shutdown_grace_s + HYPERCORN_MARGIN_S
            async with trio.open_nursery() as children:
                for _ in range(settings.workers):
                    children.start_soon(_keep_running, command, sock.fileno(), grace)
                task_status.started(RunningGateway(url, state, sim, printed_key, tuple(configured)))
                await shutdown_trigger()
                children.cancel_scope.cancel()
        nursery.cancel_scope.cancel()  # the simulators, in --demo


async def _keep_running(command: list[str], fd: int, grace_s: float) -> None:
    """Run one child; start it again whenever it exits on its own. Cancellation stops it
    gracefully (`_terminate`)."""
    while True:
        result = await trio.run_process(
            command,
            check=False,
            pass_fds=(fd,),
            process_group=0,
            deliver_cancel=partial(_terminate, grace_s=grace_s),
        )
        logger.warning("worker exited with status %s; starting it again", result.returncode)
        await trio.sleep(RESTART_DELAY_S)


async def _terminate(process: trio.Process, *, grace_s: float) -> None:
    """One SIGTERM (the child's graceful shutdown), then SIGKILL past the grace period."""
    process.send_signal(signal.SIGTERM)
    with trio.move_on_after(grace_s + KILL_MARGIN_S):
        await process.wait()
        return
    logger.warning("worker %s outlived the grace period; killing it", process.pid)
    process.kill()
