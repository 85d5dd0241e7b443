"""The `gateway` command: serve, run the simulators alone, create keys."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import attrs
import trio

from gateway.app.extras import installed_report
from gateway.app.memory import limit_malloc_arenas
from gateway.app.scaleout import check_workers
from gateway.app.server import RunningGateway, run_gateway
from gateway.app.supervisor import supervise
from gateway.operator.logs import batched_logs, configure_logging
from gateway.operator.pauses import settle_heap
from gateway.platform.auth import DEFAULT_PERMISSIONS
from gateway.platform.config import Settings, load_settings
from store import keys
from store.db import open_database
from store.secrets import KeyKind, new_api_key
from store.workspaces import DEFAULT_WORKSPACE_ID


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = argv  # what a supervisor passes on to its workers
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description="AI gateway")
    commands = parser.add_subparsers(title="commands")

    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--data-dir", type=Path)
    serve.add_argument("--config", type=Path, help="a TOML settings file")
    serve.add_argument(
        "--demo",
        action="store_true",
        default=None,
        help="start the simulated upstreams in-process and use them",
    )
    serve.add_argument(
        "--workers",
        type=int,
        help="worker processes serving the port (above 1 needs GATEWAY_REDIS_URL)",
    )
    serve.add_argument("--worker-fd", type=int, help=argparse.SUPPRESS)  # set by the supervisor
    serve.set_defaults(func=_serve)

    sim = commands.add_parser("sim", help="run the simulated upstreams alone")
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=9090)
    sim.add_argument("--ttft-ms", type=float, default=0.0)
    sim.add_argument("--tokens-per-second", type=float, default=0.0)
    sim.set_defaults(func=_sim)

    key_cmd = commands.add_parser("keys", help="manage API keys").add_subparsers(title="keys")
    create = key_cmd.add_parser("create", help="create a key and print it once")
    create.add_argument("--name", required=True)
    create.add_argument("--type", choices=("admin", "prod", "dev"), default="prod")
    create.add_argument("--data-dir", type=Path)
    create.add_argument("--config", type=Path)
    create.set_defaults(func=_create_key)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        name: getattr(args, name, None) for name in ("host", "port", "data_dir", "demo", "workers")
    }
    overrides["admin_key"] = os.environ.get("GATEWAY_ADMIN_KEY")
    return load_settings(config_file=getattr(args, "config", None), overrides=overrides)


def _serve(args: argparse.Namespace) -> int:
    limit_malloc_arenas()  # before any thread starts (`gateway.app.memory`)
    settings = _settings(args)
    configure_logging(settings.log_format, batched=True)
    refused = check_workers(settings, os.environ)
    if refused is not None:
        print(f"gateway: {refused}", file=sys.stderr)
        return 2
    if args.worker_fd is not None:
        return _serve_worker(settings, args.worker_fd)
    if settings.workers > 1:
        return _serve_workers(settings, sys.argv[1:] if args.argv is None else args.argv)

    async def run() -> None:
        async with batched_logs(), trio.open_nursery() as nursery:
            running: RunningGateway = await nursery.start(
                lambda task_status: run_gateway(
                    settings, shutdown_trigger=_signalled, task_status=task_status
                )
            )
            _settle(settings)
            print(banner(running), flush=True)

    trio.run(run)
    return 0


def _serve_worker(settings: Settings, fd: int) -> int:
    """One worker of `--workers N` (started by the supervisor): no banner, no bootstrap."""
    worker = attrs.evolve(settings, workers=1, demo=False)

    async def run() -> None:
        async with batched_logs(), trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: run_gateway(
                    worker, shutdown_trigger=_signalled, listen_fd=fd, task_status=task_status
                )
            )
            _settle(settings)
            # One line per worker, so an operator (and the benchmark) sees each one serve.
            print(f"worker {os.getpid()} serving", flush=True)

    trio.run(run)
    return 0


def _settle(settings: Settings) -> None:
    """Once serving: freeze the start-up heap (`gateway.operator.pauses.settle_heap`)."""
    if settings.gc_freeze:
        settle_heap(settings.gc_gen0_threshold)


def _serve_workers(settings: Settings, argv: list[str]) -> int:
    async def run() -> None:
        async with batched_logs(), trio.open_nursery() as nursery:
            running: RunningGateway = await nursery.start(
                supervise, settings, argv, os.environ, _signalled
            )
            print(banner(running) + f"\nworkers: {settings.workers}", flush=True)

    trio.run(run)
    return 0


async def _signalled() -> None:
    """Return on SIGINT or SIGTERM: the start of a graceful shutdown."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


def banner(running: RunningGateway) -> str:
    url = running.url
    key = running.printed_admin_key or "$GATEWAY_ADMIN_KEY"
    lines = [
        f"gateway listening on {url}",
        f"providers: {', '.join(running.providers) or 'none (configure through the API)'}"
        + (" (simulated)" if running.sim else ""),
    ]
    lines += installed_report()
    if running.printed_admin_key:
        lines.append(f"admin key for this run (shown once): {running.printed_admin_key}")
    lines += [
        "",
        "try it:",
        f"  curl -s {url}/v1/chat/completions -H 'Authorization: Bearer {key}' \\",
        "    -H 'Content-Type: application/json' \\",
        '    -d \'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}\'',
        "",
        "  python -c \"from openai import OpenAI; c = OpenAI(base_url='"
        + url
        + "/v1', api_key='"
        + key
        + "'); print(c.chat.completions.create(model='gpt-4o-mini', "
        "messages=[{'role': 'user', 'content': 'Hello'}]).choices[0].message.content)\"",
    ]
    return "\n".join(lines)


def _sim(args: argparse.Namespace) -> int:
    from providers.sim.server import SimConfig, run

    run(
        args.host,
        args.port,
        SimConfig(ttft_ms=args.ttft_ms, tokens_per_second=args.tokens_per_second),
    )
    return 0


def _create_key(args: argparse.Namespace) -> int:
    settings = _settings(args)
    kind = cast(KeyKind, args.type)
    full_key = new_api_key(kind)
    record = keys.new_record(
        full_key,
        workspace_id=DEFAULT_WORKSPACE_ID,
        name=args.name,
        kind=kind,
        permissions=DEFAULT_PERMISSIONS[kind],
        now=datetime.now(UTC),
        # An admin key made on the machine is the operator's, as the one made at start:
        # its organisation's owner (`gateway.platform.auth.reaches_organization`).
        role="owner" if kind == "admin" else None,
    )
    db = open_database(settings.data_dir, settings.database_url)
    try:
        db.run_sync(lambda d: keys.insert(d, record))
    finally:
        db.close()
    print(full_key)
    print(
        f"created {args.type} key {record.id} ({args.name!r}); it is not shown again",
        file=sys.stderr,
    )
    return 0
