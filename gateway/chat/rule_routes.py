"""Management of routing rules: list, create, read, patch, enable/disable, delete, test.

Every call is scoped to the caller's workspace: a rule id of another workspace is answered
exactly like an unknown one (404). Two enabled rules of a workspace may not share a
priority (409 `priority_conflict`); disabled rules do not count, so enabling one whose
priority has since been taken is refused the same way. Changes reach the in-memory rule
book before the response is sent, so the next chat request is routed by them.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from datetime import UTC, datetime
from typing import Any

import attrs
import sqlite_utils
from quart import Blueprint, Response, request

from gateway.chat import rule_shapes as shapes
from gateway.chat.input import parse_chat_body
from gateway.chat.services import ChatServices
from gateway.platform.answers import Deleted
from gateway.platform.apidoc import operation
from gateway.platform.audit import audit_event, audited
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, invalid_request, not_found
from gateway.platform.roles import Action
from gateway.platform.web import iso, json_response, read_object
from gateway.upstream.options import ROUTING_MODES
from gateway.upstream.routing.apply import DryRun, dry_run
from gateway.upstream.routing.book import RuleBook
from gateway.upstream.routing.context import chat_context
from gateway.upstream.routing.rule_input import next_enabled, parse_create, parse_patch
from gateway.upstream.routing.rules import Actions, Evaluation
from gateway.upstream.routing.transform import request_changes
from providers.types import ChatRequest
from store import keys
from store import rules as rule_store
from store.audit import AuditEvent
from store.keys import ApiKeyRecord
from store.rules import PriorityConflictError, RoutingRuleRecord

RULES = "/v1/management/routing-rules"
TAG = "routing-rules"
TEST_ONLY_FIELDS = ("headers", "api_key_id", "at")
RULE_NOT_FOUND = {404: "rule_not_found"}
PRIORITY_CONFLICT = {409: "priority_conflict"}
INVALID_RULE = {400: "invalid_rule", 422: "invalid_model"}


def rule_to_api(record: RoutingRuleRecord) -> shapes.RoutingRule:
    """The spec's Routing rule object."""
    return {
        "id": record.id,
        "object": "routing_rule",
        "name": record.name,
        "priority": record.priority,
        "enabled": record.enabled,
        "conditions": dict(record.conditions),
        "actions": dict(record.actions),
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
    }


def priority_conflict(error: PriorityConflictError) -> ApiError:
    return ApiError(
        409,
        "priority_conflict",
        f"Priority {error.priority} is already held by the enabled rule "
        f"'{error.holder.name}' ({error.holder.id}); choose another priority or disable it.",
        param="priority",
        value=error.priority,
        conflicting_rule={"id": error.holder.id, "name": error.holder.name},
    )


def routing_rules_blueprint(chat: ChatServices) -> Blueprint:
    """The routing-rule routes, bound to one app's chat services (and its rule book)."""
    api = RoutingRulesApi(chat, chat.rules)
    one = f"{RULES}/<rule_id>"
    bp = Blueprint("routing_rules", __name__)
    bp.add_url_rule(RULES, "list_rules", api.list_rules, methods=["GET"])
    bp.add_url_rule(RULES, "create_rule", api.create_rule, methods=["POST"])
    bp.add_url_rule(f"{RULES}/test", "test_rules", api.test_rules, methods=["POST"])
    bp.add_url_rule(one, "read_rule", api.read_rule, methods=["GET"])
    bp.add_url_rule(one, "patch_rule", api.patch_rule, methods=["PATCH"])
    bp.add_url_rule(f"{one}/enable", "enable_rule", api.enable_rule, methods=["POST"])
    bp.add_url_rule(f"{one}/disable", "disable_rule", api.disable_rule, methods=["POST"])
    bp.add_url_rule(one, "delete_rule", api.delete_rule, methods=["DELETE"])
    return bp


class RoutingRulesApi:
    """The handlers of the routing-rule routes; one method per route."""

    def __init__(self, chat: ChatServices, book: RuleBook) -> None:
        self.chat = chat
        self.book = book

    @operation(
        "Routing rules, by priority",
        TAG,
        answer=shapes.RuleList,
        permission="view_configuration",
    )
    async def list_rules(self) -> Response:
        principal = await self._manager("view_configuration")
        ws = principal.workspace_id
        records = await self.chat.db.run(lambda d: rule_store.list_rules(d, ws))
        listed: shapes.RuleList = {"object": "list", "rules": [rule_to_api(r) for r in records]}
        return json_response(listed)

    @operation(
        "Create a rule",
        TAG,
        body=shapes.NewRule,
        answer=shapes.RoutingRule,
        status=201,
        permission="edit_routing_rules",
        errors={**INVALID_RULE, **PRIORITY_CONFLICT},
    )
    async def create_rule(self) -> Response:
        principal = await self._manager("edit_routing_rules")
        spec = parse_create(await read_object(), self.chat.engine.catalog)
        now = datetime.now(UTC)
        record = await self._write(
            None,
            lambda d: rule_store.create(
                d,
                workspace_id=principal.workspace_id,
                name=spec.name,
                priority=spec.priority,
                enabled=spec.enabled,
                conditions=spec.conditions,
                actions=spec.actions,
                now=now,
            ),
            _event(principal, "routing_rule.created", spec.name, spec.priority),
        )
        return json_response(rule_to_api(record), 201)

    @operation(
        "Which rule would match a chat request, and what would be called",
        TAG,
        body=shapes.RuleTrial,
        answer=shapes.RuleTrialResult,
        permission="view_configuration",
        description="The workspace's enabled rules are evaluated; with no provider "
        "configured, every catalog provider counts as active. Nothing is called.",
        errors={
            400: ("invalid_tool_choice", "provider_not_configured", "unsupported_parameter"),
            403: "model_not_allowed",
            404: ("key_not_found", "model_not_found"),
        },
    )
    async def test_rules(self) -> Response:
        """A dry run of the rules against a chat-style body, see `_test`."""
        principal = await self._manager("view_configuration")
        sent = {name.lower(): value for name, value in request.headers.items()}
        body = await read_object()
        return json_response(await _test(self.chat, self.book, principal, body, sent))

    @operation(
        "One rule",
        TAG,
        answer=shapes.RoutingRule,
        permission="view_configuration",
        errors=RULE_NOT_FOUND,
    )
    async def read_rule(self, rule_id: str) -> Response:
        principal = await self._manager("view_configuration")
        return json_response(rule_to_api(await self._find(principal, rule_id)))

    @operation(
        "Change a rule",
        TAG,
        body=shapes.RuleChange,
        answer=shapes.RoutingRule,
        permission="edit_routing_rules",
        errors={**RULE_NOT_FOUND, **INVALID_RULE, **PRIORITY_CONFLICT},
    )
    async def patch_rule(self, rule_id: str) -> Response:
        principal = await self._manager("edit_routing_rules")
        current = await self._find(principal, rule_id)
        changes = parse_patch(await read_object(), self.chat.engine.catalog)
        ws = principal.workspace_id
        event = _event(principal, "routing_rule.updated", current.name, current.priority, rule_id)
        record = await self._write(
            rule_id, lambda d: rule_store.update(d, rule_id, ws, **changes), event
        )
        return json_response(rule_to_api(record))

    @operation(
        "Enable a rule",
        TAG,
        body=None,
        answer=shapes.RoutingRule,
        permission="edit_routing_rules",
        errors={**RULE_NOT_FOUND, **PRIORITY_CONFLICT},
    )
    async def enable_rule(self, rule_id: str) -> Response:
        return await self._switch(rule_id, "enable")

    @operation(
        "Disable a rule",
        TAG,
        body=None,
        answer=shapes.RoutingRule,
        permission="edit_routing_rules",
        errors=RULE_NOT_FOUND,
    )
    async def disable_rule(self, rule_id: str) -> Response:
        return await self._switch(rule_id, "disable")

    @operation(
        "Delete a rule",
        TAG,
        answer=Deleted,
        permission="edit_routing_rules",
        errors=RULE_NOT_FOUND,
    )
    async def delete_rule(self, rule_id: str) -> Response:
        principal = await self._manager("edit_routing_rules")
        record = await self._find(principal, rule_id)
        ws = principal.workspace_id
        event = _event(principal, "routing_rule.deleted", record.name, record.priority, rule_id)
        if not await audited(self.chat.db, event, lambda d: rule_store.delete(d, rule_id, ws)):
            raise rule_not_found(rule_id)
        self.book.remove(ws, rule_id)
        return json_response({"id": rule_id, "object": "routing_rule", "deleted": True})

    # -- helpers -----------------------------------------------------------------------------

    async def _manager(self, action: Action) -> Principal:
        """The authenticated caller, whose role allows `action`, in its workspace."""
        return await self.chat.auth.manager(action)

    async def _write(
        self,
        rule_id: str | None,
        fn: Callable[[sqlite_utils.Database], RoutingRuleRecord | None],
        event: AuditEvent | None = None,
    ) -> RoutingRuleRecord:
        """Run a store write, with its audit event in the same transaction when there is
        one; 409 on a priority clash, 404 when the rule is gone."""
        try:
            if event is None:
                record = await self.chat.db.run(fn)
            else:
                record = await audited(self.chat.db, event, fn, target_of=_rule_id)
        except PriorityConflictError as exc:
            raise priority_conflict(exc) from None
        if record is None:
            raise rule_not_found(rule_id or "")
        self.book.put(record)
        return record

    async def _find(self, principal: Principal, rule_id: str) -> RoutingRuleRecord:
        ws = principal.workspace_id
        record = await self.chat.db.run(lambda d: rule_store.get(d, rule_id, ws))
        if record is None:
            raise rule_not_found(rule_id)
        return record

    async def _switch(self, rule_id: str, trigger: str) -> Response:
        """Enable or disable a rule; audited only when its chat actually changed."""
        principal = await self._manager("edit_routing_rules")
        current = await self._find(principal, rule_id)
        enabled = next_enabled(current.enabled, trigger)
        now = datetime.now(UTC)
        ws = principal.workspace_id
        event = None
        if current.enabled != enabled:
            kind = f"routing_rule.{trigger}d"
            event = _event(principal, kind, current.name, current.priority, rule_id)
        record = await self._write(
            rule_id, lambda d: rule_store.set_enabled(d, rule_id, ws, enabled, now), event
        )
        return json_response(rule_to_api(record))


def _rule_id(record: RoutingRuleRecord | None) -> str:
    return record.id if record is not None else ""


def _event(
    principal: Principal, kind: str, name: str, priority: int | None, rule_id: str = ""
) -> AuditEvent:
    details = {"name": name, "priority": priority}
    return audit_event(
        principal, kind, target_type="routing_rule", target_id=rule_id, details=details
    )


def rule_not_found(rule_id: str) -> ApiError:
    return not_found("rule_not_found", f"No routing rule '{rule_id}' in this workspace.")


# -- the dry run -----------------------------------------------------------------------------


async def _test(
    chat: ChatServices,
    book: RuleBook,
    principal: Principal,
    body: dict[str, Any],
    sent: dict[str, str],
) -> shapes.RuleTrialResult:
    """Route a chat-style body as the chat endpoint would, without calling any upstream.

    The headers a rule's `headers` condition sees are the test call's own (as a chat call's
    would be), overridden by the body's `headers` extension where both name one.
    Extensions of the body: `headers` (the request headers to assume), `api_key_id` (a key
    of this workspace to assume as the caller, default the caller), `at` (ISO 8601 instant
    to assume, default now). The workspace's enabled rules are the ones evaluated; when no
    provider is configured, every catalog provider counts as active so that rules can be
    tried before the providers are set up. `request_changes` shows what the matched
    rule's transform would change in the request sent upstream (`{}` when nothing).
    """
    chat_body = {k: v for k, v in body.items() if k not in TEST_ONLY_FIELDS}
    params = parse_chat_body(chat_body)
    if chat_body.get("metadata") is not None and not isinstance(chat_body["metadata"], dict):
        raise invalid_request("'metadata' must be an object.", param="metadata")
    headers = sent | _test_headers(body.get("headers"))
    key = await _test_key(chat, principal, body.get("api_key_id"))
    ctx = chat_context(chat.engine.catalog, key, chat_body, headers, _test_instant(body.get("at")))
    mode = params.routing_mode or _mode(headers.get("x-routing-mode"))
    ws = principal.workspace_id
    active: Set[str] = chat.engine.registry.active_ids(ws) or {
        p.id for p in chat.engine.catalog.providers()
    }
    run = dry_run(
        chat.engine.catalog,
        active,
        book.enabled(ws),
        ctx,
        model=params.model,
        mode=mode,
        request=params.request,
        provider=params.provider,
        disabled=frozenset(chat.engine.registry.configured(ws)) - active,
    )
    return _dry_run_to_api(run, params.request)


def _dry_run_to_api(run: DryRun, asked: ChatRequest) -> shapes.RuleTrialResult:
    matched = run.matched
    target = run.resolution.target
    return {
        "matched_rule": (
            None
            if matched is None
            else {"id": matched.id, "name": matched.name, "priority": matched.priority}
        ),
        "resolved_model": target.model_id,
        "provider": target.provider_id,
        "fallback_chain": run.fallback_chain,
        "estimated_cost": None if run.cost is None else run.cost.total,
        "estimated_tokens": {"prompt": run.prompt_tokens, "completion": run.completion_tokens},
        "actions": None if matched is None else _actions_to_api(matched.actions),
        "request_changes": request_changes(asked, run.request),
        "reasoning": run.resolution.reasoning,
        "conditions_evaluated": [_evaluation_to_api(e) for e in run.evaluations],
    }


def _actions_to_api(actions: Actions) -> dict[str, Any]:
    shown = attrs.asdict(actions, recurse=True)
    shown["fallbacks"] = list(actions.fallbacks)
    shown["transform"] = actions.transform.to_json() if actions.transform else None
    return {name: value for name, value in shown.items() if value not in (None, [])}


def _evaluation_to_api(evaluation: Evaluation) -> shapes.RuleEvaluation:
    return {
        "rule_id": evaluation.rule.id,
        "name": evaluation.rule.name,
        "priority": evaluation.rule.priority,
        "matched": evaluation.matched,
        "conditions": dict(evaluation.conditions),
    }


def _test_headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise invalid_request(
            "'headers' must be an object of header names to string values.",
            param="headers",
            value=value,
        )
    return {k.lower(): v for k, v in value.items()}


def _mode(value: str | None) -> str:
    if value is None:
        return "balanced"
    if value not in ROUTING_MODES:
        raise invalid_request(
            "'X-Routing-Mode' names no routing mode.", param="headers.X-Routing-Mode", value=value
        )
    return value


async def _test_key(chat: ChatServices, principal: Principal, key_id: Any) -> ApiKeyRecord:
    if key_id is None:
        return principal.key
    if not isinstance(key_id, str):
        raise invalid_request("'api_key_id' must be a key id.", param="api_key_id", value=key_id)
    ws = principal.workspace_id
    record = await chat.db.run(lambda d: keys.get(d, key_id, ws))
    if record is None:
        raise not_found("key_not_found", f"No API key '{key_id}' in this workspace.")
    return record


def _test_instant(value: Any) -> datetime:
    if value is None:
        return datetime.now(UTC)
    try:
        if not isinstance(value, str):
            raise ValueError
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:  # the document says date-time: a zone is part of it
            raise ValueError
    except ValueError:
        raise invalid_request(
            "'at' must be an ISO 8601 timestamp with its zone.", param="at", value=value
        ) from None
    return moment
