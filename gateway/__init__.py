# The store's package first: it imports sqlite-utils without numpy (store/__init__.py),
# before any module of ours imports sqlite-utils itself.
import store  # noqa: F401
