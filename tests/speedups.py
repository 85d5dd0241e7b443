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

Production code runs the libraries unchanged; only the test process installs these.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import Callable
from typing import Any

import httpx._transports.default as httpx_transports
import httpx2._transports.default as httpx2_transports
from werkzeug.routing.rules import Rule

Builder = Callable[..., tuple[str, str]]


def install() -> None:
    _cache_route_builders()
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
