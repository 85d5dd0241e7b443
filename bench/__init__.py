"""The gateway's benchmark suite: `python -m bench` (or `make bench`).

It starts the simulated upstream, the gateway and, for comparison, the LiteLLM proxy,
each in its own process pinned to a core, drives them with the same load and writes one
summary per run under `bench/results/`: the JSON and one chart. See `bench/README.md`.
"""
