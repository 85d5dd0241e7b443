"""The core's long-lived background work: one module a worker.

Each worker module has `async def run(<the few things it uses>, *, task_status)`; the
composition root binds those and its lifespan nursery starts every worker with
`nursery.start` (`gateway.app.server.core_workers`, then each mounted family's
`Mounted.workers`), so the gateway reports ready only once each worker is; work reaches a
worker over a bounded channel. After Hypercorn has drained the in-flight requests the
nursery is cancelled, and each worker finishes its own cleanup under a shielded deadline
no longer than the shutdown grace period. No worker is started anywhere else.
"""
