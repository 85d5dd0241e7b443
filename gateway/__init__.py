import sys

# The store's package first: it imports sqlite-utils without numpy (store/__init__.py),
# before any module of ours imports sqlite-utils itself.
import store  # noqa: F401

# httpx imports its command-line client whenever click, rich and pygments are installed
# (the dev tools install them): ~3 MiB resident of rich and pygments that the gateway
# never runs. A None entry makes that optional import fail, which httpx expects (its
# `main` then says the CLI is not installed). Here, not in `__main__`, so that the
# `gateway` console script gets it too; a process that imported httpx first keeps it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
