"""Two pure caches that spare the test suite work it repeats thousands of times.

Most tests start a whole gateway and open two or three HTTP clients; before these caches,
two identical computations took about a quarter of a second of CPU per test, more than
the tests' own requests (counted with cProfile over tests/gateway/test_chat_api.py):

- Werkzeug compiles two URL builders per route with `ast` and `compile` every time an
  app registers its blueprints (~560 routes: ~1,100 `compile` calls per gateway start).
  The builder is a plain function of the rule's text, its parsed parts and its defaults
  (it reaches the rule's converters through the `self` it is bound to later), so one built
  for an identical rule is the same function. The gateway never builds URLs from routes;
  routing (the matcher) is untouched.
- httpx (ours, the gateway's webhook client) and httpx2 (the official SDKs' clients)
  load the whole CA bundle into a new `SSLContext` for each client (~75 ms each on this
  machine). The tests speak plain HTTP to local servers only, so no handshake ever uses
  the context; one verifying context per process is shared, built by the libraries' own
  function, the first time it is asked for.
- Every gateway start migrated a new, empty SQLite file through all migrations (~0.16 s
  of CPU: each DDL statement re-reads the growing schema). An empty database opened by
  `store.db.open_database` now receives a copy (SQLite's backup API) of one in-memory
  database migrated once per process by the real `apply_migrations`: the same schema,
  seed rows and `schema_migrations` versions. A database that has tables is migrated as
  before, and tests/store (which proves the migrations and `open_database` themselves)
  turns the copy off (`Template.enabled`).

Production code runs the libraries unchanged; only the test process installs these.
"""

from __future__ import annotations

import inspect
import sqlite3
import ssl
import threading
from collections.abc import Callable
from typing import Any

import httpx._transports.default as httpx_transports
import httpx2._transports.default as httpx2_transports
import sqlite_utils
from werkzeug.routing.rules import Rule

import store.db
from store import latency_sketch
from store.migrations import MIGRATIONS

Builder = Callable[..., tuple[str, str]]


class Template:
    """The once-migrated in-memory database; `enabled` is False while tests/store runs."""

    enabled = True
    lock = threading.Lock()
    conn: sqlite3.Connection | None = None


def install() -> None:
    _cache_route_builders()
    _copy_migrated_template()
    _share_verifying_context(httpx_transports)
    _share_verifying_context(httpx2_transports)


def _cache_route_builders() -> None:
    original = Rule._compile_builder
    if list(inspect.signature(original).parameters) != ["self", "append_unknown"]:
        return  # another Werkzeug: leave it as it is rather than guess
    builders: dict[tuple[Any, ...], Builder] = {}

    def compile_builder(self: Rule, append_unknown: bool = True) -> Builder:
        defaults = tuple(sorted((k, repr(v)) for k, v in (self.defaults or {}).items()))
        key = (self.rule, tuple(self._trace), defaults, append_unknown)
        builder = builders.get(key)
        if builder is None:
            builder = builders[key] = original(self, append_unknown)
        return builder

    Rule._compile_builder = compile_builder  # type: ignore[method-assign]


def _share_verifying_context(module: Any) -> None:
    """Only the default request (verify, no client certificate) is shared; any other
    goes to the library's own function as before."""
    original = module.create_ssl_context
    shared: dict[bool, ssl.SSLContext] = {}

    def create_ssl_context(
        verify: Any = True, cert: Any = None, trust_env: bool = True
    ) -> ssl.SSLContext:
        if verify is not True or cert is not None:
            return original(verify=verify, cert=cert, trust_env=trust_env)  # type: ignore[no-any-return]
        if trust_env not in shared:
            shared[trust_env] = original(verify=verify, cert=cert, trust_env=trust_env)
        return shared[trust_env]

    module.create_ssl_context = create_ssl_context


def _copy_migrated_template() -> None:
    original = store.db.apply_migrations

    def apply_migrations(
        db: sqlite_utils.Database, migrations: tuple[tuple[int, str], ...] = MIGRATIONS
    ) -> list[int]:
        if not Template.enabled or migrations is not MIGRATIONS or _has_tables(db):
            return original(db, migrations)
        with Template.lock:
            if Template.conn is None:
                conn = sqlite3.connect(":memory:", check_same_thread=False)
                original(sqlite_utils.Database(conn), MIGRATIONS)
                Template.conn = conn
            Template.conn.backup(db.conn)
        latency_sketch.register(db.conn)  # SQL functions belong to the connection
        return [version for version, _ in MIGRATIONS]

    store.db.apply_migrations = apply_migrations  # type: ignore[assignment]


def _has_tables(db: sqlite_utils.Database) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None
