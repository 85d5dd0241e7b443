"""Agents: create (with the agent key, once), list, read, update, delete, suspend, resume,
usage, and limit-warning alerts.

Every route is a management route: the caller's role must allow the action (agents are
keys: creating, changing and deleting one is `create_api_keys`, suspending `revoke_api_keys`,
reading `view_configuration`) in its workspace; an agent of another workspace answers
exactly like an unknown one (404). Every change is audited in its own transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import sqlite_utils
from quart import Blueprint, Response, request

from gateway.agents import render
from gateway.agents.book import Loaded
from gateway.agents.input import (
    AgentAlertBody,
    AgentBody,
    AgentChange,
    AgentSuspension,
    AgentUsageQuery,
    merged_auto_suspend,
    parse_alert,
    parse_create,
    parse_patch,
)
from gateway.agents.limits import (
    LIMIT_NAMES,
    AgentLimitsBody,
    Limits,
    check_lowered,
    effective,
    organization_ceilings,
    overridden,
    parse_limits,
    template_limits,
)
from gateway.agents.service import AGENT_KEY_PREFIX, create_agent, delete_agent
from gateway.agents.services import AgentsServices
from gateway.agents.suspension import Actor, set_status
from gateway.kernels.webhooks.registration import check_webhook_url
from gateway.kernels.webhooks.render import delivery as delivery_body
from gateway.kernels.webhooks.signing import new_secret
from gateway.platform.answers import Deleted, ListOf
from gateway.platform.apidoc import operation
from gateway.platform.audit import audit_event, audited, written
from gateway.platform.auth import Principal, session_of
from gateway.platform.errors import ApiError, not_found
from gateway.platform.roles import Action
from gateway.platform.shapes import parse, parse_query
from gateway.platform.web import json_response, read_object
from store import agents as agent_store
from store import keys
from store import webhooks as webhook_store
from store.agents import AgentAlertRecord, AgentRecord

AGENTS = "/v1/mcp/agents"
# The organisation's agent limits: the ceilings its agents' limits inherit.
ORG_LIMITS = "/v1/management/agent-limits"
MAX_ALERTS_PER_AGENT = 20
LIST_LIMIT = 100  # deliveries shown with an alert, newest first
TAG = "agents"
# The codes of the routes' own refusals, by status (`Operation.errors`).
Codes = dict[int, str | tuple[str, ...]]
NO_AGENT: Codes = {404: "agent_not_found"}
NO_ALERT: Codes = {404: ("agent_not_found", "alert_not_found")}
LIMITS_REFUSED: Codes = {400: ("template_conflict", "limit_above_organization")}


def agents_blueprint(services: AgentsServices) -> Blueprint:
    api = AgentsApi(services)
    bp = Blueprint("agents", __name__)
    one = f"{AGENTS}/<agent_id>"
    bp.add_url_rule(AGENTS, "list_agents", api.list_agents, methods=["GET"])
    bp.add_url_rule(AGENTS, "create_agent", api.create_agent, methods=["POST"])
    bp.add_url_rule(one, "read_agent", api.read_agent, methods=["GET"])
    bp.add_url_rule(one, "update_agent", api.update_agent, methods=["PATCH"])
    bp.add_url_rule(one, "delete_agent", api.delete_agent, methods=["DELETE"])
    bp.add_url_rule(f"{one}/suspend", "suspend_agent", api.suspend_agent, methods=["POST"])
    bp.add_url_rule(f"{one}/resume", "resume_agent", api.resume_agent, methods=["POST"])
    bp.add_url_rule(f"{one}/usage", "agent_usage", api.agent_usage, methods=["GET"])
    bp.add_url_rule(f"{one}/alerts", "list_alerts", api.list_alerts, methods=["GET"])
    bp.add_url_rule(f"{one}/alerts", "create_alert", api.create_alert, methods=["POST"])
    alert = f"{one}/alerts/<alert_id>"
    bp.add_url_rule(alert, "read_alert", api.read_alert, methods=["GET"])
    bp.add_url_rule(alert, "delete_alert", api.delete_alert, methods=["DELETE"])
    bp.add_url_rule(ORG_LIMITS, "organization_limits", api.organization_limits, methods=["GET"])
    bp.add_url_rule(ORG_LIMITS, "set_organization_limits", api.set_limits, methods=["PUT"])
    return bp


def agent_not_found(agent_id: str) -> ApiError:
    return not_found("agent_not_found", f"No agent '{agent_id}'.", param="agent_id")


def alert_not_found(alert_id: str) -> ApiError:
    return not_found("alert_not_found", f"No alert '{alert_id}'.", param="alert_id")


class AgentsApi:
    def __init__(self, services: AgentsServices) -> None:
        self.services = services

    async def _manager(self, action: Action) -> Principal:
        return await self.services.auth.manager(action)

    async def _ceilings(self, organization_id: str) -> Limits:
        stored = await self.services.db.run(
            lambda d: agent_store.organization_limits(d, organization_id)
        )
        return organization_ceilings(stored)

    @operation(
        "Create an agent: its limits (a template, or values that may only lower the "
        "organisation's) and its agent key, shown in this answer only",
        TAG,
        body=AgentBody,
        answer=render.Agent,
        status=201,
        permission="create_api_keys",
        errors=LIMITS_REFUSED,
    )
    async def create_agent(self) -> Response:
        principal = await self._manager("create_api_keys")
        spec = parse_create(await read_object())
        ceilings = await self._ceilings(principal.organization_id)
        check_lowered(spec.limits, ceilings)
        loaded, key, full_key = await create_agent(self.services, principal, spec)
        return json_response(render.agent(loaded, key, full_key), 201)

    @operation(
        "The workspace's agents",
        TAG,
        answer=ListOf[render.Agent],
        permission="view_configuration",
    )
    async def list_agents(self) -> Response:
        principal = await self._manager("view_configuration")
        ws = principal.workspace_id
        records = await self.services.db.run(lambda d: agent_store.list_agents(d, ws))
        ceilings = await self._ceilings(principal.organization_id)
        data = [render.agent(_loaded(r, ceilings)) for r in records]
        return json_response({"object": "list", "data": data})

    @operation(
        "One agent", TAG, answer=render.Agent, permission="view_configuration", errors=NO_AGENT
    )
    async def read_agent(self, agent_id: str) -> Response:
        principal = await self._manager("view_configuration")
        loaded = await self._loaded(principal, agent_id)
        key = await self.services.db.run(lambda d: keys.get(d, loaded.record.key_id))
        return json_response(render.agent(loaded, key))

    @operation(
        "Change an agent's limits (null: inherit), tools or auto-suspension",
        TAG,
        body=AgentChange,
        answer=render.Agent,
        permission="create_api_keys",
        errors={**LIMITS_REFUSED, **NO_AGENT},
    )
    async def update_agent(self, agent_id: str) -> Response:
        principal = await self._manager("create_api_keys")
        patch = parse_patch(await read_object())
        loaded = await self._loaded(principal, agent_id)
        record = loaded.record
        base = record.limits if patch.template is None else template_limits(patch.template)
        own = overridden(base, patch.limits or {})
        check_lowered(own, loaded.ceilings)
        changed = attrs.evolve(
            record,
            name=patch.name or record.name,
            tools=record.tools if patch.tools is None else patch.tools,
            limits=own,
            template=record.template if patch.template is None else patch.template,
            auto_suspend=merged_auto_suspend(record.auto_suspend, patch.auto_suspend),
            updated_at=datetime.now(UTC),
        )
        event = audit_event(
            principal,
            "agent.updated",
            target_type="agent",
            target_id=agent_id,
            details={
                "limits": own,
                "auto_suspend": attrs.asdict(changed.auto_suspend),
                "tools": list(changed.tools),
            },
        )
        await audited(self.services.db, event, written(lambda d: agent_store.replace(d, changed)))
        return json_response(render.agent(await self.services.agents.changed(changed)))

    @operation(
        "Delete an agent and its key",
        TAG,
        answer=Deleted,
        permission="create_api_keys",
        errors=NO_AGENT,
    )
    async def delete_agent(self, agent_id: str) -> Response:
        principal = await self._manager("create_api_keys")
        if not await delete_agent(self.services, principal, agent_id):
            raise agent_not_found(agent_id)
        return json_response({"id": agent_id, "object": "agent", "deleted": True})

    @operation(
        "Suspend an agent: its requests are refused (403) until resumed",
        TAG,
        body=AgentSuspension,
        body_required=False,
        answer=render.Agent,
        permission="revoke_api_keys",
        errors=NO_AGENT,
    )
    async def suspend_agent(self, agent_id: str) -> Response:
        principal = await self._manager("revoke_api_keys")
        reason = parse(AgentSuspension, await read_object(optional=True)).reason
        return await self._set(principal, agent_id, "suspended", reason or "suspended by a manager")

    @operation(
        "Resume a suspended agent",
        TAG,
        answer=render.Agent,
        permission="revoke_api_keys",
        errors=NO_AGENT,
    )
    async def resume_agent(self, agent_id: str) -> Response:
        principal = await self._manager("revoke_api_keys")
        return await self._set(principal, agent_id, "active", None)

    async def _set(
        self, principal: Principal, agent_id: str, status: str, reason: str | None
    ) -> Response:
        actor = Actor(principal.key_id, principal.email, request.remote_addr)
        record = await set_status(
            self.services.agents,
            agent_id,
            principal.workspace_id,
            "suspended" if status == "suspended" else "active",
            actor,
            reason,
        )
        if record is None:
            raise agent_not_found(agent_id)
        return json_response(render.agent(await self.services.agents.refresh(record)))

    @operation(
        "What an agent has spent: by session, today, this month; its limits and warnings",
        TAG,
        answer=render.AgentUsage,
        query=AgentUsageQuery,
        permission="view_configuration",
        description="The agent itself may read its own usage with its agent key.",
        errors=NO_AGENT,
    )
    async def agent_usage(self, agent_id: str) -> Response:
        principal = await self._usage_reader(agent_id)
        loaded = await self._loaded(principal, agent_id)
        book = self.services.agents
        # An agent reading its own usage sees the session its request names, as the MCP
        # tool does; `?session=` chooses another.
        asked = parse_query(AgentUsageQuery, request.args).session
        session = session_of(asked) if asked else principal.agent_session
        figures = await book.figures(loaded, session)
        body = render.usage(loaded, figures, session, book.counters.wall())
        body["sessions"] = render.sessions(await book.session_rows(agent_id))
        return json_response(body)

    @operation(
        "Add a limit-warning alert: each threshold fires once per limit period to the "
        "signed webhook; the signing secret is in this answer only",
        TAG,
        body=AgentAlertBody,
        answer=render.AgentAlert,
        status=201,
        permission="create_api_keys",
        errors={
            400: ("invalid_webhook_url", "unsafe_webhook_url"),
            **NO_AGENT,
            409: "too_many_alerts",
        },
    )
    async def create_alert(self, agent_id: str) -> Response:
        principal = await self._manager("create_api_keys")
        spec = parse_alert(await read_object())
        loaded = await self._loaded(principal, agent_id)
        allowed = self.services.settings.webhook_allowed_hosts
        await check_webhook_url(spec.webhook_url, allowed, param="webhook_url")
        existing = await self.services.db.run(lambda d: agent_store.list_alerts(d, agent_id))
        if len(existing) >= MAX_ALERTS_PER_AGENT:
            raise ApiError(
                409, "too_many_alerts", f"An agent has at most {MAX_ALERTS_PER_AGENT} alerts."
            )
        secret = new_secret()
        record = AgentAlertRecord(
            agent_id=agent_id,
            workspace_id=loaded.record.workspace_id,
            thresholds=spec.thresholds,
            webhook_url=spec.webhook_url,
            encrypted_secret=self.services.webhooks.cipher.encrypt({"secret": secret}),
            created_at=datetime.now(UTC),
        )
        event = audit_event(
            principal,
            "agent.alert_created",
            target_type="agent",
            target_id=agent_id,
            details={"alert_id": record.id},
        )
        await audited(
            self.services.db, event, written(lambda d: agent_store.insert_alert(d, record))
        )
        return json_response(render.alert(record, secret), 201)

    @operation(
        "An agent's alerts",
        TAG,
        answer=ListOf[render.AgentAlert],
        permission="view_configuration",
        errors=NO_AGENT,
    )
    async def list_alerts(self, agent_id: str) -> Response:
        principal = await self._manager("view_configuration")
        await self._loaded(principal, agent_id)
        records = await self.services.db.run(lambda d: agent_store.list_alerts(d, agent_id))
        return json_response({"object": "list", "data": [render.alert(r) for r in records]})

    @operation(
        "One of an agent's alerts with its webhook delivery log, newest first",
        TAG,
        answer=render.AgentAlert,
        permission="view_configuration",
        errors=NO_ALERT,
    )
    async def read_alert(self, agent_id: str, alert_id: str) -> Response:
        """One alert with its delivery log (newest first): whether its warnings arrived."""
        principal = await self._manager("view_configuration")
        await self._loaded(principal, agent_id)
        ws = principal.workspace_id

        def read(d: sqlite_utils.Database) -> tuple[AgentAlertRecord | None, list[Any]]:
            found = agent_store.get_alert(d, alert_id, agent_id)
            return found, webhook_store.list_deliveries(d, alert_id, ws, limit=LIST_LIMIT)

        record, deliveries = await self.services.db.run(read)
        if record is None:
            raise alert_not_found(alert_id)
        body = render.alert(record)
        body["deliveries"] = [delivery_body(r) for r in deliveries]
        return json_response(body)

    @operation(
        "Delete one of an agent's alerts",
        TAG,
        answer=Deleted,
        permission="create_api_keys",
        errors=NO_ALERT,
    )
    async def delete_alert(self, agent_id: str, alert_id: str) -> Response:
        """Without it an agent at its alert ceiling could only be deleted and made again."""
        principal = await self._manager("create_api_keys")
        await self._loaded(principal, agent_id)
        event = audit_event(
            principal,
            "agent.alert_deleted",
            target_type="agent",
            target_id=agent_id,
            details={"alert_id": alert_id},
        )
        if not await audited(
            self.services.db, event, lambda d: agent_store.delete_alert(d, alert_id, agent_id)
        ):
            raise alert_not_found(alert_id)
        return json_response({"id": alert_id, "object": "agent_alert", "deleted": True})

    @operation(
        "The organisation's agent limits: the ceilings its agents inherit",
        TAG,
        answer=render.AgentLimitsShown,
        permission="view_configuration",
    )
    async def organization_limits(self) -> Response:
        principal = await self._manager("view_configuration")
        ceilings = await self._ceilings(principal.organization_id)
        return json_response(render.organization_limits(ceilings))

    @operation(
        "Replace the organisation's agent limits (a name absent or null: no limit)",
        TAG,
        body=AgentLimitsBody,
        answer=render.AgentLimitsShown,
        permission="manage_billing",
    )
    async def set_limits(self) -> Response:
        """Replace the organisation's agent limits (null: no limit). Agents keep their
        overrides; an override above a lowered ceiling counts as the ceiling."""
        principal = await self._manager("manage_billing")
        limits = parse_limits(await read_object())
        ceilings = {name: limits.get(name) for name in LIMIT_NAMES}
        stored = {name: value for name, value in ceilings.items() if value is not None}
        org = principal.organization_id
        event = audit_event(
            principal,
            "agent_limits.updated",
            target_type="organization",
            target_id=org,
            details={"limits": stored},
            organization_wide=True,
        )

        def change(d: sqlite_utils.Database) -> None:
            agent_store.set_organization_limits(d, org, ceilings)

        await audited(self.services.db, event, written(change))
        self.services.agents.forget_limits()
        return json_response(render.organization_limits(await self._ceilings(org)))

    async def _usage_reader(self, agent_id: str) -> Principal:
        """A manager (`view_configuration`), or the agent itself with its own key ("agents
        use an agent key with their agent id"): an agent reads its own usage here as
        through the `self_inspect/get_my_usage` tool; any other agent's id is a 404."""
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        if not token.startswith(AGENT_KEY_PREFIX):
            return await self._manager("view_configuration")
        principal = await self.services.auth.caller()
        if principal.key.agent_id != agent_id:
            raise agent_not_found(agent_id)
        return principal

    async def _loaded(self, principal: Principal, agent_id: str) -> Loaded:
        ws = principal.workspace_id
        record = await self.services.db.run(lambda d: agent_store.get(d, agent_id, ws))
        if record is None:
            raise agent_not_found(agent_id)
        return await self.services.agents.refresh(record)


def _loaded(record: AgentRecord, ceilings: Limits) -> Loaded:
    return Loaded(record, effective(record.limits, ceilings), ceilings)
