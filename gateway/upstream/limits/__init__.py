"""Rate limits: per-key rpm, tpm, daily, monthly and concurrent limits, checked exactly.

One process: the limiter's state lives in that process's trio thread, which is what
makes check-and-take atomic (see `gateway.upstream.limits.limiter`). Several workers or
nodes: the counters live on a Redis-protocol server and every check-and-take is one
atomic script (see `gateway.upstream.limits.shared`).
"""

from gateway.upstream.limits.backend import LimitBackend
from gateway.upstream.limits.headers import RateLimitExceeded, Snapshot, rate_limit_headers
from gateway.upstream.limits.limiter import Admission, Hold, RateLimiter, Unlimited
from gateway.upstream.limits.periods import store_count_loader
from gateway.upstream.limits.policy import FREE, PRO, EffectiveLimits, effective_limits
from gateway.upstream.limits.upstream import ProviderFigures, UpstreamMeter

__all__ = [
    "FREE",
    "PRO",
    "Admission",
    "EffectiveLimits",
    "Hold",
    "LimitBackend",
    "ProviderFigures",
    "RateLimitExceeded",
    "RateLimiter",
    "Snapshot",
    "Unlimited",
    "UpstreamMeter",
    "effective_limits",
    "rate_limit_headers",
    "store_count_loader",
]
