"""Shared kernels: what several families use and no family owns (see docs/architecture.md).

A kernel imports the core (`gateway.platform`, `gateway.upstream`) and nothing else of the
gateway; families import kernels, never each other.
"""
