"""Framework-free stream primitives; import from the submodules.

- `streams.sse`: incremental Server-Sent Events decoding and encoding.
- `streams.race`: `race()`, the ordered fallback chain with optional hedging (first
  success wins, losers cancelled and closed), and its `Winner`.
- `streams.fallback`: what a chain records (`Attempt`, `Outcome`), how a candidate is
  retried (`RetryPolicy`) and how a chain fails (`AllAttemptsFailed`, `RaceAborted`).
- `streams.merge`: `merge()`, several async iterables read into one bounded channel.

Nothing is re-exported here: a package attribute named `race` would shadow the
`streams.race` module.
"""
