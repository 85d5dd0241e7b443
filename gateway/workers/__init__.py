"""Long-lived background work: one module a worker.

Each worker module has `async def run(state, *, task_status)`. The server's lifespan
nursery starts every worker with `nursery.start` (`gateway.app.server.WORKERS`), so
the gateway reports ready only once each worker is; work reaches a worker over a bounded
channel or from the shared state. After Hypercorn has drained the in-flight requests the
nursery is cancelled, and each worker finishes its own cleanup under a shielded deadline
no longer than the shutdown grace period. No worker is started anywhere else.
"""
