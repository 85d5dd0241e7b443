"""The options every model request shares, whatever its family: the `service`
extension object of the body (cache, fallbacks, tags, rate-limit handling, retry), the
routing modes, and the bounds of the sampling parameters.

Chat, embeddings, rerank and the families after them validate their own fields and call
`parse_service` for this one; admission, routing and the management API read the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

import attrs

from gateway.platform.errors import invalid_request
from gateway.platform.params import whole_number
from gateway.platform.shapes import NON_BLANK, Choices, Count, Doc, Length, Range, accepts_more

RoutingMode = Literal[
    "balanced", "cost_optimized", "performance", "low_latency", "sustain_optimized"
]
ROUTING_MODES = frozenset(get_args(RoutingMode))
# Bounds of the numeric sampling parameters; routing-rule transforms that force one
# (`gateway.upstream.routing.transform`) are held to the same ones.
NUMBER_BOUNDS: Mapping[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}
MAX_STOP = 4  # `stop` sequences
# The vocabularies of OpenAI's chat parameters that every door over chat takes (chat
# completions, the Responses API): one place for the parsers and the declared shapes.
VERBOSITIES = ("low", "medium", "high")
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")
CACHE_RETENTIONS = ("in_memory", "24h")
MAX_SAFETY_IDENTIFIER = 128
METADATA_PAIRS, METADATA_KEY, METADATA_VALUE = 16, 64, 512


# What a request may ask of the gateway's patience: every request ends in bounded time,
# so larger values are taken as these (documented in README).
MAX_QUEUE_WAIT_MS = 300_000  # `rate_limit_handling.max_wait_ms`: five minutes
MAX_RETRY_ATTEMPTS = 10  # `retry.max_attempts`, per provider


@attrs.frozen
class ServiceOptions:
    """The body's `service` extension object."""

    cache_skip: bool = False
    fallbacks: tuple[str, ...] = ()
    tags: Mapping[str, Any] = attrs.field(factory=dict)
    rate_limit_strategy: str | None = None
    max_wait_ms: int | None = None
    retry_max_attempts: int | None = None
    retryable_errors: tuple[str, ...] = ()


# -- the declared shapes (the OpenAPI document's; `parse_service` reads them by hand) -----

Model = Annotated[str, NON_BLANK, Doc("A model id, `provider/model`, an alias, or `auto`")]
Metadata = Annotated[
    dict[Annotated[str, Length(most=METADATA_KEY)], Annotated[str, Length(most=METADATA_VALUE)]],
    Count(most=METADATA_PAIRS),
    Doc(f"Up to {METADATA_PAIRS} string pairs of the caller's"),
]


@attrs.frozen
class StreamOptions:
    """What a stream carries besides the answer: a usage chunk, padding of deltas."""

    include_usage: bool = False
    include_obfuscation: bool = False


@accepts_more
@attrs.frozen
class RateLimitHandling:
    """What to do when the chosen provider's rate limit is reached."""

    strategy: Literal["queue", "fallback"] | None = None
    max_wait_ms: Annotated[int, Range(least=0)] | None = None


@accepts_more
@attrs.frozen
class RetryRequest:
    """How often to retry a provider, and on which errors."""

    max_attempts: Annotated[int, Range(least=0)] | None = None
    retryable_errors: list[str] | None = None


@accepts_more
@attrs.frozen
class ServiceRequest:
    """The body's `service` extension object; null fields are left out."""

    cache: Annotated[Literal["skip"] | None, Doc("`skip`: answer without the cache")] = None
    fallbacks: list[str] | None = None
    tags: dict[str, Any] | None = None
    rate_limit_handling: RateLimitHandling | None = None
    retry: RetryRequest | None = None


def forced_provider(capability: str) -> Any:
    """The type of `provider` on a call body: one of the catalog's providers that does
    the work (`provider_not_configured` when the workspace has not configured it); null
    leaves it to routing."""
    from providers.catalog import load_catalog

    ids = tuple(sorted(p.id for p in load_catalog().providers() if capability in p.capabilities))
    return Annotated[
        Annotated[str, Choices(ids)] | None,
        Doc("Send to this provider only (one configured in the workspace)"),
    ]


# -- the service extension -----------------------------------------------------------------


def parse_service(value: Any) -> ServiceOptions:
    if value is None:
        return ServiceOptions()
    if not isinstance(value, dict):
        raise invalid_request("'service' must be an object.", param="service", value=value)
    # Null is "left out"; any other value that is not an object is refused (`false`, `0`
    # and `[]` were read as empty objects, which the document does not allow).
    handling = _object_or_empty(value.get("rate_limit_handling"))
    retry = _object_or_empty(value.get("retry"))
    if not isinstance(handling, dict) or not isinstance(retry, dict):
        raise invalid_request(
            "'service.rate_limit_handling' and 'service.retry' must be objects.",
            param="service",
            value=value,
        )
    return ServiceOptions(
        cache_skip=_cache_skip(value.get("cache")),
        fallbacks=_string_list(value.get("fallbacks"), "service.fallbacks"),
        tags=_tags(value.get("tags")),
        rate_limit_strategy=_choice(
            handling.get("strategy"),
            ("queue", "fallback"),
            "service.rate_limit_handling.strategy",
        ),
        max_wait_ms=_at_most(
            _non_negative(handling.get("max_wait_ms"), "service.rate_limit_handling.max_wait_ms"),
            MAX_QUEUE_WAIT_MS,
        ),
        retry_max_attempts=_at_most(
            _non_negative(retry.get("max_attempts"), "service.retry.max_attempts"),
            MAX_RETRY_ATTEMPTS,
        ),
        retryable_errors=_string_list(
            retry.get("retryable_errors"), "service.retry.retryable_errors"
        ),
    )


def _object_or_empty(value: Any) -> Any:
    return {} if value is None else value


def _cache_skip(value: Any) -> bool:
    """`skip` is the one value the spec gives; any other was a silent no-op, so a client
    that misspelt it (`"none"`, `false`) believed it bypassed the cache."""
    if value is None:
        return False
    if value != "skip":
        raise invalid_request(
            "'service.cache' takes only 'skip' (answer without the cache); leave it out to "
            "use the cache.",
            param="service.cache",
            value=value,
        )
    return True


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid_request(f"'{where}' must be an array of strings.", param=where, value=value)
    return tuple(value)


def _tags(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_request(
            "'service.tags' must be an object.", param="service.tags", value=value
        )
    return value


def _choice(value: Any, allowed: tuple[str, ...], where: str) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise invalid_request(
            f"'{where}' must be one of {', '.join(allowed)}.", param=where, value=value
        )
    return str(value)


def _at_most(value: int | None, ceiling: int) -> int | None:
    return None if value is None else min(value, ceiling)


def _non_negative(value: Any, where: str) -> int | None:
    if value is None:
        return None
    whole = whole_number(value)  # JSON counts 2.0 as an integer, as the document's schema does
    if whole is None or whole < 0:
        raise invalid_request(f"'{where}' needs a non-negative integer.", param=where, value=value)
    return whole
