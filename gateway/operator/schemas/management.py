"""The management API: API keys, providers, routing rules and rate limits."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    STR,
    STRS,
    TIME,
    Operation,
    Schema,
    all_required,
    arr,
    deleted,
    listing,
    nullable,
    obj,
    ref,
)
from gateway.operator.schemas.components import RATE_LIMITS

ERRORS = (400, 401, 403, 404, 408, 413, 429)
KEYS = "api-keys"
PROVIDERS = "providers"
RULES = "routing-rules"
KEY_BODY: dict[str, Schema] = dict(
    name={"type": "string", "minLength": 1, "maxLength": 200},
    type={"enum": ["dev", "prod", "admin"]},
    permissions=STRS,
    rate_limits=RATE_LIMITS,
    expires_at=nullable(STR),
    allowed_models=STRS,
    allowed_ips=STRS,
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
        request=obj((), **KEY_BODY),
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
            provider=STR,
            credentials=obj(api_key=STR),
            settings=ANY_OBJ,
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
        request=all_required(settings=ANY_OBJ),
        errors=PROVIDER_ERRORS,
    ),
    "providers.update_credentials": Operation(
        "Replace the credentials",
        PROVIDERS,
        obj(("id", "status"), id=STR, status=STR, credentials_updated_at=TIME),
        request=all_required(api_key=STR),
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
        request=obj(("model",), model=STR, messages=arr(ANY_OBJ), metadata=ANY_OBJ),
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
