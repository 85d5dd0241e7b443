"""GET /health (no authentication: for load balancers) and GET /v1/health/detailed."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Literal, TypedDict

from quart import Blueprint, Response

from gateway.admin.services import AdminServices
from gateway.platform.answers import Time
from gateway.platform.apidoc import WORKSPACE_HEADER, operation
from gateway.platform.shapes import Choices
from gateway.platform.web import iso, json_response

TAG = "health"


class Liveness(TypedDict):
    """The gateway answers: nothing else is checked."""

    status: Literal["ok"]
    timestamp: Time


class ComponentHealth(TypedDict):
    status: Annotated[str, Choices(("healthy", "degraded", "disabled"))]
    latency_ms: float | None


class HealthComponents(TypedDict):
    api: ComponentHealth
    database: ComponentHealth
    cache: ComponentHealth
    providers: dict[str, ComponentHealth]


class DetailedHealth(TypedDict):
    """The gateway's components and each configured provider of the workspace."""

    status: Annotated[str, Choices(("healthy", "degraded"))]
    timestamp: Time
    components: HealthComponents


def health_blueprint(admin: AdminServices) -> Blueprint:
    bp = Blueprint("health", __name__)

    @bp.get("/health")
    @operation("Liveness for load balancers", TAG, answer=Liveness, public=True)
    async def health() -> Response:
        alive: Liveness = {"status": "ok", "timestamp": iso(datetime.now(UTC))}
        return json_response(alive)

    @bp.get("/v1/health/detailed")
    @operation(
        "Health of the gateway's components and of each configured provider",
        TAG,
        answer=DetailedHealth,
        headers=(WORKSPACE_HEADER,),
        description="Any key reads its own workspace's; `X-Workspace-ID` names another the "
        "caller may view analytics of. A provider switched off is `disabled` and does not "
        "make the gateway degraded.",
        errors={404: "workspace_not_found"},
    )
    async def detailed() -> Response:
        principal = await admin.auth.reader()
        started = time.perf_counter()
        await admin.db.run(lambda d: d.execute("SELECT 1").fetchone())
        db_ms = round((time.perf_counter() - started) * 1000, 2)
        providers: dict[str, ComponentHealth] = {}
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
        answer: DetailedHealth = {
            "status": "degraded" if degraded else "healthy",
            "timestamp": iso(datetime.now(UTC)),
            "components": {
                "api": {"status": "healthy", "latency_ms": 0},
                "database": {"status": "healthy", "latency_ms": db_ms},
                "cache": {"status": "healthy", "latency_ms": 0},
                "providers": providers,
            },
        }
        return json_response(answer)

    return bp
