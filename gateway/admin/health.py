"""GET /health (no authentication: for load balancers) and GET /v1/health/detailed."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from quart import Blueprint, Response

from gateway.admin.services import AdminServices
from gateway.platform.web import iso, json_response


def health_blueprint(admin: AdminServices) -> Blueprint:
    bp = Blueprint("health", __name__)

    @bp.get("/health")
    async def health() -> Response:
        return json_response({"status": "ok", "timestamp": iso(datetime.now(UTC))})

    @bp.get("/v1/health/detailed")
    async def detailed() -> Response:
        principal = await admin.auth.reader()
        started = time.perf_counter()
        await admin.db.run(lambda d: d.execute("SELECT 1").fetchone())
        db_ms = round((time.perf_counter() - started) * 1000, 2)
        providers = {}
        for pid, entry in admin.registry.configured(principal.workspace_id).items():
            figures = admin.health.figures(principal.workspace_id, pid)
            status = figures.status if entry.active else "disabled"
            providers[pid] = {
                "status": "healthy" if status == "unknown" else status,
                "latency_ms": figures.latency_ms,
            }
        # A provider the operator switched off is a choice, not a fault: as on the status
        # page, it does not make the whole gateway degraded.
        degraded = any(p["status"] not in ("healthy", "disabled") for p in providers.values())
        return json_response(
            {
                "status": "degraded" if degraded else "healthy",
                "timestamp": iso(datetime.now(UTC)),
                "components": {
                    "api": {"status": "healthy", "latency_ms": 0},
                    "database": {"status": "healthy", "latency_ms": db_ms},
                    "cache": {"status": "healthy", "latency_ms": 0},
                    "providers": providers,
                },
            }
        )

    return bp
