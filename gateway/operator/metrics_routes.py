"""GET /metrics: the Prometheus text format, for a scraper holding the metrics token or an
admin key (see `gateway.operator.metrics`)."""

from __future__ import annotations

import hmac
from functools import partial

from quart import Blueprint, Response, request

from gateway.operator.live import live_figures
from gateway.operator.metrics import CONTENT_TYPE
from gateway.operator.services import OperatorServices
from gateway.platform.apidoc import Content, operation
from gateway.platform.auth import bearer_token
from gateway.platform.errors import permission_denied


def metrics_blueprint(operator: OperatorServices) -> Blueprint:
    bp = Blueprint("metrics", __name__)
    operator.metrics.watch(partial(live_figures, operator.live, operator.metrics.providers))

    @bp.get("/metrics")
    @operation(
        "Prometheus metrics (text exposition format)",
        "operator",
        answer=Content("text/plain"),
        description="Readable with the metrics token (`GATEWAY_METRICS_TOKEN`, sent as a "
        "bearer token) or an admin API key.",
    )
    async def metrics() -> Response:
        if not _holds_metrics_token(operator, request.headers.get("authorization")):
            principal = await operator.auth.caller()
            if not principal.has("admin"):
                raise permission_denied("The metrics need the metrics token or an admin key.")
        return Response(operator.metrics.render(), status=200, content_type=CONTENT_TYPE)

    return bp


def _holds_metrics_token(operator: OperatorServices, authorization: str | None) -> bool:
    expected = operator.settings.metrics_token
    presented = bearer_token(authorization)
    if not expected or presented is None:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode())
