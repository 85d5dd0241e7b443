"""Whether one request may use the cache, and for how long its answer is kept.

The cache is on by default with a default TTL (both settings); a routing rule's
`actions.cache` (`enabled`, `ttl_seconds`) overrides either; the body's
`service.cache = "skip"` bypasses it entirely, lookup *and* store. A TTL of zero or less
means "do not cache".
"""

from __future__ import annotations

import attrs

DEFAULT_ENABLED = True
DEFAULT_TTL_S = 300.0


@attrs.frozen
class CacheDecision:
    """`enabled` covers both the lookup and the store; `ttl_s` is 0.0 when disabled."""

    enabled: bool
    ttl_s: float


BYPASS = CacheDecision(enabled=False, ttl_s=0.0)


def decide_cache(
    *,
    default_enabled: bool = DEFAULT_ENABLED,
    default_ttl_s: float = DEFAULT_TTL_S,
    rule_enabled: bool | None = None,
    rule_ttl_s: float | None = None,
    skip: bool = False,
) -> CacheDecision:
    """Combine the settings, the matching rule's cache action (if any) and `service.cache`."""
    if skip:
        return BYPASS
    enabled = default_enabled if rule_enabled is None else rule_enabled
    ttl_s = float(default_ttl_s if rule_ttl_s is None else rule_ttl_s)
    if not enabled or ttl_s <= 0:
        return BYPASS
    return CacheDecision(enabled=True, ttl_s=ttl_s)
