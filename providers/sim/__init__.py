"""Simulated upstream vendors speaking each vendor's real wire protocol, for tests,
benchmarks and the gateway's `--demo` mode. See `server` (the HTTP server and its
public API) and `core` (the contract vendor modules implement)."""
