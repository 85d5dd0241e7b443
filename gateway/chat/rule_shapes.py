"""The routing-rule routes' bodies and answers, declared (the OpenAPI document is written
from them). A rule's body is checked by `gateway.upstream.routing.rule_input`, whose every
refusal is `invalid_rule` (400; a model the catalog cannot route to is 422 `invalid_model`):
the declaration says the same fields and bounds. `conditions` and `actions` are objects
whose fields docs/routing.md lists; the rule book reads them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypedDict

import attrs

from gateway.chat.shapes import ChatCompletionRequest
from gateway.platform.answers import Time
from gateway.platform.shapes import NON_BLANK, NOT_NULL, Doc, Length, Range, needs_fields
from gateway.upstream.routing.rule_input import MAX_NAME, MAX_PRIORITY

Name = Annotated[str, NON_BLANK, Length(most=MAX_NAME)]
Priority = Annotated[
    int,
    Range(least=0, most=MAX_PRIORITY),
    Doc("Lower runs first; two enabled rules never share one (409 priority_conflict)"),
]
Conditions = Annotated[
    dict[str, Any],
    Doc("What a request must match: model, headers, metadata, time_range, token_estimate, ..."),
]
Actions = Annotated[
    dict[str, Any],
    Doc("What a match does: route_to, fallbacks, routing_mode, transform, retry, cache, ..."),
]


@attrs.frozen
class NewRule:
    """A routing rule (the fields of a rule read back may be sent too: they are ignored)."""

    name: Name
    conditions: Conditions
    actions: Actions
    priority: Annotated[Priority, Doc("Left out: the next free one")] | None = None
    enabled: bool = True
    id: Annotated[Any, Doc("Ignored, as are object, created_at, updated_at")] = None
    object: Any = None
    created_at: Any = None
    updated_at: Any = None


@needs_fields(1)
@attrs.frozen
class RuleChange:
    """A change to a rule: `conditions` and `actions` replace the stored objects whole."""

    name: Annotated[Name | None, NOT_NULL] = None
    priority: Annotated[Priority | None, NOT_NULL] = None
    enabled: Annotated[bool | None, NOT_NULL] = None
    conditions: Annotated[Conditions | None, NOT_NULL] = None
    actions: Annotated[Actions | None, NOT_NULL] = None
    id: Annotated[Any, Doc("Ignored, as are object, created_at, updated_at")] = None
    object: Any = None
    created_at: Any = None
    updated_at: Any = None


@attrs.frozen(kw_only=True)
class RuleTrial(ChatCompletionRequest):
    """A chat request routed as the chat endpoint would, without calling any upstream;
    and what to assume about it."""

    headers: (
        Annotated[dict[str, str], Doc("Request headers to assume, over the test call's own")] | None
    ) = None
    api_key_id: Annotated[str, Doc("A key of this workspace to assume as the caller")] | None = None
    at: Annotated[datetime, Doc("The instant to assume (default now)")] | None = None


class RoutingRule(TypedDict):
    """The spec's routing rule object."""

    id: str
    object: Literal["routing_rule"]
    name: str
    priority: int
    enabled: bool
    conditions: Conditions
    actions: Actions
    created_at: Time
    updated_at: Time


class RuleList(TypedDict):
    """Routing rules, by priority."""

    object: Literal["list"]
    rules: list[RoutingRule]


class MatchedRule(TypedDict):
    id: str
    name: str
    priority: int


class EstimatedTokens(TypedDict):
    prompt: int
    completion: int


class RuleEvaluation(TypedDict):
    """One enabled rule tried, and how each of its conditions came out."""

    rule_id: str
    name: str
    priority: int
    matched: bool
    conditions: dict[str, Any]


class RuleTrialResult(TypedDict):
    """Which rule would match, and what would be called."""

    matched_rule: MatchedRule | None
    resolved_model: str
    provider: str
    fallback_chain: list[str]
    estimated_cost: float | None
    estimated_tokens: EstimatedTokens
    actions: dict[str, Any] | None
    request_changes: Annotated[
        dict[str, Any], Doc("What the rule's transform would change in the request sent")
    ]
    reasoning: str
    conditions_evaluated: list[RuleEvaluation]
