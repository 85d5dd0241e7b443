"""A real PostgreSQL server (Debian's `postgresql` package) on a free loopback port.

Started by the tests as `redis-server` is (tests/scaleout/redis_server.py): `initdb`
into a fresh directory, `postgres` on 127.0.0.1 with durability off (a test server:
nothing outlives it), readiness by a real connection, never a sleep. PostgreSQL refuses
to run as root, so under root it runs as the `postgres` user the package creates.
`make test` installs the package (scripts/test-system-packages.txt); where the binaries are
absent the tests that need them are skipped with that reason.
"""

from __future__ import annotations

import atexit
import functools
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import attrs
import psycopg

START_DEADLINE_S = 30.0
USER = "gateway"
PREFIX = "gateway-pg-"
# A server directory left by a test process that died before its teardown (a killed
# pytest-xdist worker runs neither fixtures' finalizers nor atexit) is removed by a later
# start once it is this old and no server runs in it.
STALE_AFTER_S = 3600.0


def binaries() -> Path | None:
    """The directory of `initdb` and `postgres` (Debian keeps them out of PATH)."""
    found = shutil.which("initdb")
    if found is not None:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _demoted() -> tuple[Callable[[], None] | None, int | None, int | None]:
    """How to run the server: as the `postgres` user under root, else as we are."""
    if os.geteuid() != 0:
        return None, None, None
    user = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    return demote, user.pw_uid, user.pw_gid


@attrs.define
class PostgresServer:
    bin_dir: Path
    root: Path = attrs.field(factory=lambda: Path(tempfile.mkdtemp(prefix=PREFIX)))
    port: int = attrs.field(factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    # Tests run without fsync (nothing outlives the server); the bench compares stores
    # as deployed, so there the server syncs its commits as SQLite's FULL does.
    durable: bool = False

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        _remove_stale(self.root.parent)
        demote, uid, gid = _demoted()
        data = self.root / "data"
        if uid is not None and gid is not None:
            os.chown(self.root, uid, gid)
        subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(data), "-U", USER, "-A", "trust",
             "--no-sync", "-E", "UTF8", "--locale", "C"],
            check=True, capture_output=True, preexec_fn=demote,
        )  # fmt: skip
        self.process = subprocess.Popen(
            [str(self.bin_dir / "postgres"), "-D", str(data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
             "-c", "max_connections=200", "-c", "shared_buffers=32MB", *self._durability()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=demote,
        )  # fmt: skip
        self._wait_ready()

    def _durability(self) -> list[str]:
        if self.durable:
            return []
        off = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
        return [part for setting in off for part in ("-c", setting)]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=1).close()
                return
            except psycopg.OperationalError:
                if self.process is None or self.process.poll() is not None:
                    raise RuntimeError("postgres exited at start") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not start on port {self.port}") from None
                time.sleep(0.05)

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)


def _remove_stale(parent: Path) -> None:
    for root in parent.glob(PREFIX + "*"):
        try:
            old = root.stat().st_mtime < time.time() - STALE_AFTER_S
        except FileNotFoundError:
            continue
        if old and not _serving(root / "data" / "postmaster.pid"):
            shutil.rmtree(root, ignore_errors=True)


def _serving(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


@functools.cache
def process_server() -> PostgresServer:
    """One server for this test process, started on first use and stopped at its exit:
    for `GATEWAY_TEST_DATABASE=postgres`, which runs any gateway test on PostgreSQL
    (`tests.gateway.conftest.gateway_settings`)."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("GATEWAY_TEST_DATABASE=postgres needs Debian's postgresql package")
    server = PostgresServer(bin_dir)
    server.start()
    atexit.register(server.stop)
    return server
