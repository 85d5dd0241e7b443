"""Shared kernels: interfaces over core types that several families share, so that no
family imports another (docs/architecture.md, "Adding a family")."""
