"""The agents family: agent management under /v1/mcp/agents and the MCP server /v1/mcp.

Shapes follow `gateway.agents.render`; request bodies are closed because
`gateway.agents.input` refuses unknown fields (a misspelt limit is a 400, not ignored).
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    AUTH_ERRORS,
    BOOL,
    INT,
    NUM,
    STR,
    STRS,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    closed,
    deleted,
    filled,
    header,
    listing,
    nullable,
    obj,
    query,
)

DELIVERY = all_required(
    id=STR,
    object={"const": "webhook_delivery"},
    event=STR,
    url=STR,
    status={"enum": ["pending", "delivered", "failed", "dropped"]},
    attempts=INT,
    last_status_code=nullable(INT),
    last_error=nullable(STR),
    payload=ANY_OBJ,
    created_at=TIME,
    updated_at=TIME,
    delivered_at=TIME,
)

TAG = "agents"
ERRORS = (*AUTH_ERRORS, 404)
CONFLICTS = (*ERRORS, 409)
LIMIT_NAMES = (
    "requests_per_minute",
    "cost_per_session",
    "cost_daily",
    "cost_monthly",
    "audio_minutes_daily",
    "audio_minutes_monthly",
    "ocr_pages_daily",
    "ocr_pages_monthly",
    "embedding_tokens_daily",
    "concurrent_sessions",
)
LIMIT_VALUE: Schema = nullable(NUM)
LIMITS = obj(LIMIT_NAMES, **dict.fromkeys(LIMIT_NAMES, LIMIT_VALUE))
# Counted in whole units (a fraction is refused, `gateway.agents.limits.INTEGER_LIMITS`).
WHOLE_LIMITS = frozenset(
    {
        "requests_per_minute",
        "concurrent_sessions",
        "ocr_pages_daily",
        "ocr_pages_monthly",
        "embedding_tokens_daily",
    }
)
LIMITS_IN = closed(
    (),
    **{
        name: nullable(
            {
                "type": "integer" if name in WHOLE_LIMITS else "number",
                "minimum": 0,
                "maximum": 1e12,
            }
        )
        for name in LIMIT_NAMES
    },
)
TEMPLATE: Schema = {"enum": ["Free", "Standard", "Enterprise"]}
AUTO_SUSPEND = all_required(
    on_cost_limit=BOOL,
    on_rpm_abuse=BOOL,
    abuse_threshold=INT,
)
AUTO_SUSPEND_IN = closed(
    on_cost_limit=BOOL,
    on_rpm_abuse=BOOL,
    abuse_threshold={"type": "integer", "minimum": 1, "maximum": 100000},
)
AGENT = obj(
    ("id", "object", "name", "status", "permissions", "limits", "auto_suspend", "created_at"),
    id=STR,
    object={"const": "agent"},
    name=STR,
    status={"enum": ["active", "suspended"]},
    permissions=all_required(tools=STRS),
    limits=LIMITS,
    limit_overrides=ANY_OBJ,
    organization_limits=LIMITS,
    template=nullable(TEMPLATE),
    auto_suspend=AUTO_SUSPEND,
    key_id=STR,
    key_prefix=STR,
    key_last_four=STR,
    suspended_reason=nullable(STR),
    suspended_at=TIME,
    created_at={"type": "string", "format": "date-time"},
    updated_at={"type": "string", "format": "date-time"},
)
CREATED = {"allOf": [AGENT, all_required(key=STR)]}
NAME: Schema = filled(200)
TOOLS: Schema = arr({"type": "string", "minLength": 1, "maxLength": 200}, maxItems=100)
PERMISSIONS = nullable(closed(tools=nullable(TOOLS)))
# Null fields are left out; `limits` may name a template, which must then be `template`'s
# (`template_conflict` otherwise).
SETTINGS: dict[str, Schema] = dict(
    permissions=PERMISSIONS,
    limits=nullable({"anyOf": [LIMITS_IN, TEMPLATE]}),
    template=nullable(TEMPLATE),
    auto_suspend=nullable(AUTO_SUSPEND_IN),
)
CREATE = closed(("name",), name=NAME, **SETTINGS)
PATCH = closed((), name=NAME, **SETTINGS)
PERIOD = obj(
    ("cost", "committed", "remaining_budget", "resets_at"),
    cost=NUM,
    committed=NUM,
    remaining_budget=nullable(NUM),
    audio_minutes=NUM,
    ocr_pages=INT,
    embedding_tokens=INT,
    resets_at=STR,
)
USAGE = obj(
    ("object", "agent_id", "session", "daily", "monthly", "limits", "warnings"),
    object={"const": "agent.usage"},
    agent_id=STR,
    status={"enum": ["active", "suspended"]},
    session=obj(
        ("id", "cost", "remaining_budget"),
        id=STR,
        cost=NUM,
        committed=NUM,
        remaining_budget=nullable(NUM),
    ),
    daily=PERIOD,
    monthly=PERIOD,
    requests_last_minute=INT,
    active_sessions=INT,
    in_flight=INT,
    limits=LIMITS,
    warnings=arr(obj(("message",), message=STR, limit_type=nullable(STR), fraction=nullable(NUM))),
    sessions=arr(all_required(id=STR, cost=NUM, in_flight=INT, active=BOOL)),
)
FRACTIONS = arr({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, minItems=1, maxItems=10)
ALERT = all_required(
    id=STR,
    object={"const": "agent_alert"},
    agent_id=STR,
    type={"const": "limit_warning"},
    thresholds={"type": "object", "additionalProperties": arr(NUM)},
    webhook_url=STR,
    created_at={"type": "string", "format": "date-time"},
)
ALERT_IN = closed(
    ("type", "thresholds", "webhook_url"),
    type={"const": "limit_warning"},
    thresholds=closed((), **dict.fromkeys(LIMIT_NAMES, FRACTIONS)) | {"minProperties": 1},
    webhook_url={"type": "string", "minLength": 1, "maxLength": 2048},
)
JSONRPC = obj(("jsonrpc",), jsonrpc={"const": "2.0"}, id={"type": ["string", "integer", "null"]})
SESSION_HEADERS = (
    header("Mcp-Session-Id", "The session that 'initialize' returned (every later message)."),
    header("MCP-Protocol-Version", "The negotiated protocol version."),
    header("X-Agent-Session", "The agent session whose cost the tools report."),
)


OPERATIONS: dict[str, Operation] = {
    "agents.create_agent": Operation(
        "Create an agent: its limits (a template, or values that may only lower the "
        "organisation's) and its agent key, shown in this answer only",
        TAG,
        CREATED,
        status=201,
        request=CREATE,
    ),
    "agents.list_agents": Operation("The workspace's agents", TAG, listing(AGENT)),
    "agents.read_agent": Operation("One agent", TAG, AGENT, errors=ERRORS),
    "agents.update_agent": Operation(
        "Change an agent's limits (null: inherit) or auto-suspension",
        TAG,
        AGENT,
        request=PATCH,
        errors=ERRORS,
    ),
    "agents.delete_agent": Operation(
        "Delete an agent and its key",
        TAG,
        deleted("agent"),
        errors=ERRORS,
    ),
    "agents.suspend_agent": Operation(
        "Suspend an agent: its requests are refused (403) until resumed",
        TAG,
        AGENT,
        request=obj(reason=nullable({"type": "string", "maxLength": 500})),
        body_required=False,
        errors=ERRORS,
    ),
    "agents.resume_agent": Operation("Resume a suspended agent", TAG, AGENT, errors=ERRORS),
    "agents.agent_usage": Operation(
        "What an agent has spent: by session, today, this month; its limits and warnings",
        TAG,
        USAGE,
        errors=ERRORS,
        query=(query("session", STR, "The session to detail (default: 'default')."),),
    ),
    "agents.create_alert": Operation(
        "Add a limit-warning alert: each threshold fires once per limit period to the "
        "signed webhook; the signing secret is in this answer only",
        TAG,
        {"allOf": [ALERT, all_required(secret=STR)]},
        status=201,
        request=ALERT_IN,
        errors=CONFLICTS,
    ),
    "agents.list_alerts": Operation("An agent's alerts", TAG, listing(ALERT), errors=ERRORS),
    "agents.read_alert": Operation(
        "One of an agent's alerts with its webhook delivery log, newest first",
        TAG,
        {"allOf": [ALERT, all_required(deliveries=arr(DELIVERY))]},
        errors=ERRORS,
    ),
    "agents.delete_alert": Operation(
        "Delete one of an agent's alerts", TAG, deleted("agent_alert"), errors=ERRORS
    ),
    "agents.organization_limits": Operation(
        "The organisation's agent limits: the ceilings its agents inherit",
        TAG,
        all_required(object={"const": "agent_limits"}, limits=LIMITS),
    ),
    "agents.set_organization_limits": Operation(
        "Replace the organisation's agent limits (a name absent or null: no limit)",
        TAG,
        all_required(object={"const": "agent_limits"}, limits=LIMITS),
        request=LIMITS_IN,
    ),
    "mcp.post_message": Operation(
        "The MCP server (Streamable HTTP): one JSON-RPC message; answers agent keys only",
        TAG,
        JSONRPC,
        request=ANY_OBJ,
        errors=ERRORS,
        headers=SESSION_HEADERS,
        alternatives=(("text/event-stream", STR),),
    ),
    "mcp.end_session": Operation(
        "End an MCP session",
        TAG,
        deleted("mcp_session"),
        errors=ERRORS,
        headers=SESSION_HEADERS,
    ),
}
