"""Usage alerts: create, list, read (with its history and notifications), delete.

All routes need the `management` permission and act on the caller's workspace; an alert
of another workspace is answered exactly like an unknown one (404). An alert's webhook
URL passes the SSRF guard at creation (and again at every delivery); its signing secret is
returned once, in the creation answer.
"""

from __future__ import annotations

from datetime import UTC, datetime

from quart import Blueprint, Response

from gateway.kernels.webhooks.registration import check_webhook_url
from gateway.kernels.webhooks.render import delivery as delivery_body
from gateway.kernels.webhooks.signing import new_secret
from gateway.platform.audit import audit_event, audited, written
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, not_found
from gateway.platform.roles import Action
from gateway.platform.web import json_response, read_object
from gateway.status import render
from gateway.status.input import parse_alert
from gateway.status.services import StatusServices
from store import alerts as alert_store
from store import webhooks as webhook_store
from store.alerts import AlertRecord

ALERTS = "/v1/alerts"
# The evaluator reads every alert each interval: their number is bounded.
MAX_ALERTS = 100


def alerts_blueprint(svc: StatusServices) -> Blueprint:
    api = AlertsApi(svc)
    bp = Blueprint("alerts", __name__)
    bp.add_url_rule(ALERTS, "list_alerts", api.list_alerts, methods=["GET"])
    bp.add_url_rule(ALERTS, "create_alert", api.create_alert, methods=["POST"])
    bp.add_url_rule(f"{ALERTS}/<alert_id>", "read_alert", api.read_alert, methods=["GET"])
    bp.add_url_rule(f"{ALERTS}/<alert_id>", "delete_alert", api.delete_alert, methods=["DELETE"])
    return bp


def alert_not_found(alert_id: str) -> ApiError:
    return not_found("alert_not_found", f"No alert '{alert_id}'.", param="alert_id")


class AlertsApi:
    def __init__(self, svc: StatusServices) -> None:
        self.svc = svc

    async def _manager(self, action: Action) -> Principal:
        """The one permission check of this blueprint's management routes: the caller's
        role (`gateway.platform.roles`) must allow `action` in its workspace."""
        return await self.svc.auth.manager(action)

    async def create_alert(self) -> Response:
        principal = await self._manager("configure_providers")
        spec = parse_alert(await read_object())
        ws = principal.workspace_id
        existing = await self.svc.db.run(lambda d: alert_store.list_alerts(d, ws))
        if len(existing) >= MAX_ALERTS:
            raise ApiError(409, "too_many_alerts", f"A workspace has at most {MAX_ALERTS} alerts.")
        secret = None
        if spec.webhook is not None:
            allowed = self.svc.settings.webhook_allowed_hosts
            await check_webhook_url(spec.webhook, allowed, param="notify.webhook")
            secret = new_secret()
        record = AlertRecord(
            id=alert_store.new_alert_id(),
            workspace_id=principal.workspace_id,
            name=spec.name,
            metric=spec.metric,
            operator=spec.operator,
            threshold=spec.threshold,
            window_minutes=spec.window_minutes,
            notify_email=spec.emails,
            notify_webhook=spec.webhook,
            encrypted_secret=None
            if secret is None
            else self.svc.webhooks.cipher.encrypt({"secret": secret}),
            state="ok",
            last_value=None,
            last_evaluated_at=None,
            last_changed_at=None,
            created_at=datetime.now(UTC),
        )
        event = audit_event(
            principal,
            "alert.created",
            target_type="alert",
            target_id=record.id,
            details={"name": record.name},
        )
        await audited(self.svc.db, event, written(lambda d: alert_store.insert(d, record)))
        return json_response(render.alert(record, [], secret), 201)

    async def list_alerts(self) -> Response:
        ws = (await self._manager("view_configuration")).workspace_id
        records = await self.svc.db.run(lambda d: alert_store.list_alerts(d, ws))
        return json_response({"object": "list", "data": [render.alert(r) for r in records]})

    async def read_alert(self, alert_id: str) -> Response:
        record = await self._alert(await self._manager("view_configuration"), alert_id)
        ws = record.workspace_id
        events, deliveries = await self.svc.db.run(
            lambda d: (
                alert_store.events(d, alert_id),
                webhook_store.list_deliveries(d, alert_id, ws),
            )
        )
        body = render.alert(record, events)
        body["deliveries"] = [delivery_body(r) for r in deliveries]
        return json_response(body)

    async def delete_alert(self, alert_id: str) -> Response:
        principal = await self._manager("configure_providers")
        ws = principal.workspace_id
        event = audit_event(principal, "alert.deleted", target_type="alert", target_id=alert_id)
        if not await audited(self.svc.db, event, lambda d: alert_store.delete(d, alert_id, ws)):
            raise alert_not_found(alert_id)
        return json_response({"id": alert_id, "object": "alert", "deleted": True})

    async def _alert(self, principal: Principal, alert_id: str) -> AlertRecord:
        ws = principal.workspace_id
        record = await self.svc.db.run(lambda d: alert_store.get(d, alert_id, ws))
        if record is None:
            raise alert_not_found(alert_id)
        return record
