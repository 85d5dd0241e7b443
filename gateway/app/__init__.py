"""The composition root: the only package that knows every family (see docs/architecture.md)."""
