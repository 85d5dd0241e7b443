"""The status page, status-webhook subscriptions and operators' incident endpoints.

`GET /v1/status` needs any valid key (the providers and incidents it shows are the
workspace's own); subscriptions and incidents need the `management` permission. Every id
of another workspace is answered exactly like an unknown one (404).
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
from gateway.status import input as status_input
from gateway.status import render, service
from gateway.status.services import StatusServices
from store import incidents as incident_store
from store import webhooks as webhook_store
from store.audit import AuditEvent
from store.incidents import IncidentRecord
from store.webhooks import WebhookRecord

WEBHOOKS = "/v1/status/webhooks"
INCIDENTS = "/v1/management/incidents"
LIST_LIMIT = 100
# Bounded fan-out: each event costs one delivery per subscription.
MAX_WEBHOOKS = 25


def status_blueprint(svc: StatusServices) -> Blueprint:
    api = StatusApi(svc)
    bp = Blueprint("status", __name__)
    bp.add_url_rule("/v1/status", "status_page", api.status_page, methods=["GET"])
    bp.add_url_rule(WEBHOOKS, "list_webhooks", api.list_webhooks, methods=["GET"])
    bp.add_url_rule(WEBHOOKS, "create_webhook", api.create_webhook, methods=["POST"])
    one = f"{WEBHOOKS}/<webhook_id>"
    bp.add_url_rule(one, "read_webhook", api.read_webhook, methods=["GET"])
    bp.add_url_rule(one, "delete_webhook", api.delete_webhook, methods=["DELETE"])
    bp.add_url_rule(f"{one}/deliveries", "webhook_deliveries", api.deliveries, methods=["GET"])
    bp.add_url_rule(INCIDENTS, "list_incidents", api.list_incidents, methods=["GET"])
    bp.add_url_rule(INCIDENTS, "create_incident", api.create_incident, methods=["POST"])
    inc = f"{INCIDENTS}/<incident_id>"
    bp.add_url_rule(inc, "read_incident", api.read_incident, methods=["GET"])
    bp.add_url_rule(inc, "update_incident", api.update_incident, methods=["PATCH"])
    bp.add_url_rule(f"{inc}/resolve", "resolve_incident", api.resolve_incident, methods=["POST"])
    return bp


def webhook_not_found(webhook_id: str) -> ApiError:
    return not_found("webhook_not_found", f"No status webhook '{webhook_id}'.", param="webhook_id")


def incident_not_found(incident_id: str) -> ApiError:
    return not_found("incident_not_found", f"No incident '{incident_id}'.", param="incident_id")


class StatusApi:
    def __init__(self, svc: StatusServices) -> None:
        self.svc = svc

    async def _manager(self, action: Action) -> Principal:
        """The one permission check of this blueprint's management routes: the caller's
        role (`gateway.platform.roles`) must allow `action` in its workspace."""
        return await self.svc.auth.manager(action)

    async def status_page(self) -> Response:
        principal = await self.svc.auth.reader()
        page = await service.status_page(self.svc, principal.workspace_id, datetime.now(UTC))
        return json_response(page)

    # -- webhooks ----------------------------------------------------------------------------

    async def create_webhook(self) -> Response:
        principal = await self._manager("configure_providers")
        spec = status_input.parse_webhook(await read_object())
        await check_webhook_url(spec.url, self.svc.settings.webhook_allowed_hosts, param="url")
        ws = principal.workspace_id
        existing = await self.svc.db.run(lambda d: webhook_store.list_webhooks(d, ws))
        if len(existing) >= MAX_WEBHOOKS:
            raise ApiError(
                409,
                "too_many_webhooks",
                f"A workspace has at most {MAX_WEBHOOKS} status webhooks; delete one first.",
            )
        secret = new_secret()
        record = WebhookRecord(
            id=webhook_store.new_webhook_id(),
            workspace_id=principal.workspace_id,
            url=spec.url,
            events=spec.events,
            encrypted_secret=self.svc.webhooks.cipher.encrypt({"secret": secret}),
            created_at=datetime.now(UTC),
        )
        event = audit_event(
            principal,
            "status_webhook.created",
            target_type="status_webhook",
            target_id=record.id,
            details={"url": record.url, "events": list(record.events)},
        )
        await audited(
            self.svc.db, event, written(lambda d: webhook_store.insert_webhook(d, record))
        )
        return json_response(render.webhook(record, secret), 201)

    async def list_webhooks(self) -> Response:
        ws = (await self._manager("view_configuration")).workspace_id
        records = await self.svc.db.run(lambda d: webhook_store.list_webhooks(d, ws))
        return json_response({"object": "list", "data": [render.webhook(r) for r in records]})

    async def read_webhook(self, webhook_id: str) -> Response:
        principal = await self._manager("view_configuration")
        return json_response(render.webhook(await self._webhook(principal, webhook_id)))

    async def delete_webhook(self, webhook_id: str) -> Response:
        principal = await self._manager("configure_providers")
        ws = principal.workspace_id
        event = audit_event(
            principal, "status_webhook.deleted", target_type="status_webhook", target_id=webhook_id
        )
        if not await audited(
            self.svc.db, event, lambda d: webhook_store.delete_webhook(d, webhook_id, ws)
        ):
            raise webhook_not_found(webhook_id)
        return json_response({"id": webhook_id, "object": "status_webhook", "deleted": True})

    async def deliveries(self, webhook_id: str) -> Response:
        principal = await self._manager("view_configuration")
        await self._webhook(principal, webhook_id)
        ws = principal.workspace_id
        records = await self.svc.db.run(
            lambda d: webhook_store.list_deliveries(d, webhook_id, ws, limit=LIST_LIMIT)
        )
        return json_response({"object": "list", "data": [delivery_body(r) for r in records]})

    async def _webhook(self, principal: Principal, webhook_id: str) -> WebhookRecord:
        ws = principal.workspace_id
        record = await self.svc.db.run(lambda d: webhook_store.get_webhook(d, webhook_id, ws))
        if record is None:
            raise webhook_not_found(webhook_id)
        return record

    # -- incidents ---------------------------------------------------------------------------

    async def list_incidents(self) -> Response:
        ws = (await self._manager("view_configuration")).workspace_id
        records = await self.svc.db.run(
            lambda d: incident_store.list_recent(d, ws, limit=LIST_LIMIT)
        )
        return json_response({"object": "list", "data": [render.incident(r) for r in records]})

    async def create_incident(self) -> Response:
        principal = await self._manager("configure_providers")
        spec = status_input.parse_incident(await read_object())
        self._check_services(spec.affected_services)
        record = await service.open_incident(
            self.svc,
            workspace_id=principal.workspace_id,
            title=spec.title,
            severity=spec.severity,
            status=spec.status,
            message=spec.message,
            services=spec.affected_services,
            source="operator",
            now=datetime.now(UTC),
            audit=self._audit(principal, "incident.created", "", title=spec.title),
        )
        return await self._incident_answer(record, 201)

    def _check_services(self, names: tuple[str, ...]) -> None:
        """The services of `/v1/status` are `api` and the providers: an incident naming
        another affected nothing the page shows, silently."""
        known = {"api"} | {p.id for p in self.svc.catalog.providers()}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ApiError(
                400,
                "invalid_request",
                f"'affected_services' names unknown services {unknown}; use 'api' or "
                f"provider ids: {sorted(known - {'api'})}.",
                param="affected_services",
                value=unknown,
            )

    async def read_incident(self, incident_id: str) -> Response:
        record = await self._incident(await self._manager("view_configuration"), incident_id)
        return await self._incident_answer(record)

    async def update_incident(self, incident_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._open_incident(principal, incident_id)
        change = status_input.parse_incident_change(await read_object(), record.severity)
        changed = await service.change_incident(
            self.svc,
            record,
            status=change.status,
            severity=change.severity,
            message=change.message,
            now=datetime.now(UTC),
            audit=self._audit(principal, "incident.updated", incident_id, status=change.status),
        )
        return await self._incident_answer(changed)

    async def resolve_incident(self, incident_id: str) -> Response:
        principal = await self._manager("configure_providers")
        record = await self._open_incident(principal, incident_id)
        message = status_input.parse_resolution(await read_object(optional=True))
        resolved = await service.resolve_incident(
            self.svc,
            record,
            message=message,
            now=datetime.now(UTC),
            audit=self._audit(principal, "incident.resolved", incident_id),
        )
        return await self._incident_answer(resolved)

    async def _incident_answer(self, record: IncidentRecord, status: int = 200) -> Response:
        """An incident with its `updates` history, the same after every change as on a
        read (the creation answer showed none, the change answers no history at all)."""
        updates = await self.svc.db.run(lambda d: incident_store.updates(d, record.id))
        return json_response(render.incident(record, updates), status)

    def _audit(
        self, principal: Principal, kind: str, incident_id: str, **details: object
    ) -> AuditEvent:
        """An operator's incident change, for the audit log (the service writes it with the
        change; a new incident's id is filled in there)."""
        return audit_event(
            principal, kind, target_type="incident", target_id=incident_id, details=details
        )

    async def _incident(self, principal: Principal, incident_id: str) -> IncidentRecord:
        ws = principal.workspace_id
        record = await self.svc.db.run(lambda d: incident_store.get(d, incident_id, ws))
        if record is None:
            raise incident_not_found(incident_id)
        return record

    async def _open_incident(self, principal: Principal, incident_id: str) -> IncidentRecord:
        record = await self._incident(principal, incident_id)
        if not record.is_open:
            raise ApiError(
                409, "incident_resolved", f"Incident '{incident_id}' is already resolved."
            )
        return record
