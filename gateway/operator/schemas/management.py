"""The management API: API keys, providers, routing rules and rate limits."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    FILLED,
    INT,
    MODEL,
    STR,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    changes,
    closed,
    deleted,
    filled,
    listing,
    nullable,
    obj,
    ref,
)
from gateway.platform.auth import ALL_PERMISSIONS
from providers.elevenlabs_ws import TRANSPORTS

ERRORS = (400, 401, 403, 404, 408, 413, 429)
# A chat message, as the chat route's declared body puts it in the document's components
# (`gateway.chat.shapes.ChatMessage`).
CHAT_MESSAGE: Schema = {
    "anyOf": [
        ref(name)
        for name in (
            "ChatPromptMessage",
            "ChatAssistantMessage",
            "ChatAssistantCallMessage",
            "ChatToolMessage",
        )
    ]
}
KEYS = "api-keys"
PROVIDERS = "providers"
RULES = "routing-rules"
OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4_NETWORK: Schema = {
    "type": "string",
    "pattern": f"^({OCTET}\\.){{3}}{OCTET}(/([0-9]|[12][0-9]|3[0-2]))?$",
}
ADDRESS: Schema = {
    "anyOf": [IPV4_NETWORK, {"type": "string", "format": "ipv6"}],
    "description": "An IP address or a CIDR network",
}
LIMIT: Schema = nullable({"type": "integer", "minimum": 0})
KEY_LIMITS: Schema = closed(
    rpm=LIMIT,
    tpm=LIMIT,
    daily_requests=LIMIT,
    monthly_requests=nullable({"type": "integer", "minimum": 1}),
    concurrent=LIMIT,
) | {"description": "Merged over the key's limits; null removes one"}
KEY_FIELDS: dict[str, Schema] = dict(
    name=filled(200),
    rate_limits=nullable(KEY_LIMITS),
    expires_at=nullable({"type": "string", "format": "date-time"})
    | {"description": "In the future (`invalid_expiry` otherwise)"},
    allowed_models=nullable(arr(filled())),
    allowed_ips=nullable(arr(ADDRESS)),
)
PERMISSIONS: Schema = arr({"enum": list(ALL_PERMISSIONS)})
KEY_BODY: dict[str, Schema] = dict(
    type={"enum": ["dev", "prod", "admin"]},
    permissions=nullable(PERMISSIONS) | {"description": "null: the type's defaults"},
    **KEY_FIELDS,
)
RULE_BODY: dict[str, Schema] = dict(
    name=STR, priority=INT, enabled=BOOL, conditions=ANY_OBJ, actions=ANY_OBJ
)


def _key_op(
    summary: str,
    response: Schema,
    *,
    status: int = 200,
    request: Schema | None = None,
    body_required: bool = True,
    errors: tuple[int, ...] = ERRORS,
) -> Operation:
    return Operation(
        summary,
        KEYS,
        response,
        status=status,
        request=request,
        body_required=body_required,
        errors=errors,
    )


KEY_OPERATIONS = {
    "api_keys.list_keys": _key_op(
        "API keys of the caller's workspace",
        listing(ref("ApiKey")),
    ),
    "api_keys.create_key": _key_op(
        "Create a key; the full secret is in this answer only",
        {"allOf": [ref("ApiKey"), all_required(key=STR)]},
        status=201,
        request=obj(("name",), **KEY_BODY),
    ),
    "api_keys.read_key": _key_op("One key, with today's usage", ref("ApiKey")),
    "api_keys.patch_key": _key_op(
        "Change a key's name, limits, permissions, models or addresses",
        all_required(id=STR, updated_at=TIME),
        request=changes(obj((), permissions=PERMISSIONS, **KEY_FIELDS), null_changes=True),
    ),
    "api_keys.rotate_key": _key_op(
        "Issue a successor; the old key works for the grace period",
        all_required(
            id=STR,
            new_key=STR,
            new_key_id=STR,
            old_key_expires_at=TIME,
            rotated_at=TIME,
        ),
        request=obj(grace_period_hours={"type": "integer", "minimum": 0}),
        body_required=False,
        errors=(*ERRORS, 409),
    ),
    "api_keys.revoke_key": _key_op(
        "Revoke a key at once",
        obj(("id", "status"), id=STR, status={"const": "revoked"}, revoked_at=TIME),
    ),
    "api_keys.delete_key": _key_op("Delete a key", deleted()),
}

PROVIDER_STATE = all_required(id=STR, status=STR)
SECRET: Schema = filled(4096)
CREDENTIALS: Schema = obj(
    ("api_key",),
    api_key=SECRET,
) | {"additionalProperties": {"type": ["string", "number", "boolean", "null"]}}
NAMED_SETTING: Schema = nullable(filled(200))
SETTINGS: Schema = obj(
    organization_id=NAMED_SETTING,
    default_voice=NAMED_SETTING,
    speech_transport=nullable({"enum": list(TRANSPORTS)}),
) | {
    "description": "Merged over the stored settings (null removes one). Also "
    "`default_model` (one of the provider's models), `base_url` (an http(s) URL the "
    "operator's address policy allows) and the provider's own fields (`region`)."
}
PROVIDER_ERRORS = (*ERRORS, 409, 422)

PROVIDER_OPERATIONS = {
    "providers.list_providers": Operation(
        "Every supported provider, configured or not",
        PROVIDERS,
        all_required(providers=arr(ref("Provider"))),
        errors=ERRORS,
    ),
    "providers.configure": Operation(
        "Configure a provider with its credentials",
        PROVIDERS,
        ref("Provider"),
        status=201,
        request=obj(
            ("provider", "credentials"),
            provider=FILLED,
            credentials=CREDENTIALS,
            settings=nullable(SETTINGS),
        ),
        errors=PROVIDER_ERRORS,
    ),
    "providers.health": Operation(
        "Live health figures of the configured providers",
        PROVIDERS,
        all_required(providers={"type": "object"}),
        errors=ERRORS,
    ),
    "providers.read_provider": Operation(
        "One provider's detail", PROVIDERS, ref("Provider"), errors=ERRORS
    ),
    "providers.patch_provider": Operation(
        "Merge new settings",
        PROVIDERS,
        ref("Provider"),
        request=obj(settings=nullable(SETTINGS)),
        body_required=False,
        errors=PROVIDER_ERRORS,
    ),
    "providers.update_credentials": Operation(
        "Replace the credentials",
        PROVIDERS,
        obj(("id", "status"), id=STR, status=STR, credentials_updated_at=TIME),
        request=CREDENTIALS,
        errors=PROVIDER_ERRORS,
    ),
    "providers.test_provider": Operation(
        "Call the provider now and report",
        PROVIDERS,
        all_required(id=STR, test_result=STR),
        errors=(*ERRORS, 409),
    ),
    "providers.disable": Operation(
        "Stop routing to the provider", PROVIDERS, PROVIDER_STATE, errors=PROVIDER_ERRORS
    ),
    "providers.enable": Operation(
        "Route to the provider again", PROVIDERS, PROVIDER_STATE, errors=PROVIDER_ERRORS
    ),
    "providers.delete": Operation(
        "Forget the provider's configuration",
        PROVIDERS,
        deleted(),
        errors=PROVIDER_ERRORS,
    ),
}

RULE_ERRORS = (*ERRORS, 409, 422)

RULE_OPERATIONS = {
    "routing_rules.list_rules": Operation(
        "Routing rules, by priority",
        RULES,
        all_required(rules=arr(ref("RoutingRule"))),
        errors=ERRORS,
    ),
    "routing_rules.create_rule": Operation(
        "Create a rule",
        RULES,
        ref("RoutingRule"),
        status=201,
        request=obj(("name", "conditions", "actions"), **RULE_BODY),
        errors=RULE_ERRORS,
    ),
    "routing_rules.test_rules": Operation(
        "Which rule would match a chat request, and what would be called",
        RULES,
        all_required(matched_rule=nullable(ANY_OBJ), resolved_model=STR),
        request=obj(
            ("model", "messages"),
            model=MODEL,
            messages=arr(CHAT_MESSAGE, minItems=1),
            metadata=nullable(ANY_OBJ),
        ),
        errors=RULE_ERRORS,
    ),
    "routing_rules.read_rule": Operation("One rule", RULES, ref("RoutingRule"), errors=ERRORS),
    "routing_rules.patch_rule": Operation(
        "Change a rule",
        RULES,
        ref("RoutingRule"),
        request=obj((), **RULE_BODY),
        errors=RULE_ERRORS,
    ),
    "routing_rules.enable_rule": Operation(
        "Enable a rule", RULES, ref("RoutingRule"), errors=RULE_ERRORS
    ),
    "routing_rules.disable_rule": Operation(
        "Disable a rule", RULES, ref("RoutingRule"), errors=RULE_ERRORS
    ),
    "routing_rules.delete_rule": Operation(
        "Delete a rule",
        RULES,
        deleted(),
        errors=ERRORS,
    ),
}

OPERATIONS = {
    **KEY_OPERATIONS,
    **PROVIDER_OPERATIONS,
    **RULE_OPERATIONS,
    "rate_limits.rate_limits": Operation(
        "The caller's limits and what is left of them",
        "rate-limits",
        ANY_OBJ,
        errors=(401, 403),
    ),
}
