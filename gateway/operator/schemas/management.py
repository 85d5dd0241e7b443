"""The management API: routing rules and rate limits."""

from __future__ import annotations

from gateway.operator.apidoc import (
    ANY_OBJ,
    BOOL,
    INT,
    MODEL,
    STR,
    Operation,
    Schema,
    all_required,
    arr,
    deleted,
    nullable,
    obj,
    ref,
)

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
RULES = "routing-rules"
RULE_BODY: dict[str, Schema] = dict(
    name=STR, priority=INT, enabled=BOOL, conditions=ANY_OBJ, actions=ANY_OBJ
)


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
    **RULE_OPERATIONS,
    "rate_limits.rate_limits": Operation(
        "The caller's limits and what is left of them",
        "rate-limits",
        ANY_OBJ,
        errors=(401, 403),
    ),
}
