"""Shared kernels: what several families use and no family owns, and the interfaces over
core types that several families share, so that no family imports another (see
docs/architecture.md, "Adding a family").

A kernel imports the core (`gateway.platform`, `gateway.upstream`) and nothing else of the
gateway; families import kernels, never each other.
"""
