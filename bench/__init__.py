"""The gateway's benchmark suite: `python -m bench` (or `make bench`).

It starts the simulated upstream, the gateway and, for comparison, the LiteLLM proxy,
each in its own process pinned to a core, drives them with the same load and writes
JSON, a Markdown summary and charts under `bench/results/`. See `bench/README.md`.
"""
