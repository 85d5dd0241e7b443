"""Kernels: what several families share and no family owns, named for what they are
(docs/architecture.md). A kernel imports the core (`platform`, `upstream`) and no family."""
