"""What the gateway sends each provider, per workspace: requests and tokens per minute.

Fed by the requests sent upstream (not by client requests: a cache hit or a refused
request costs a provider nothing, a fallback costs two). Limits come from the provider's
`settings.rpm` / `settings.tpm` when the operator gave them; otherwise they are unknown
(None). The meter only observes: the management view reports it, nothing is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from gateway.upstream.limits.windows import SlidingLog

Clock = Callable[[], float]


@attrs.define
class _Windows:
    requests: SlidingLog = attrs.field(factory=SlidingLog)
    tokens: SlidingLog = attrs.field(factory=SlidingLog)

    def is_empty(self, now: float) -> bool:
        return self.requests.is_empty(now) and self.tokens.is_empty(now)


@attrs.frozen
class ProviderFigures:
    rpm_limit: int | None
    rpm_used: int
    tpm_limit: int | None
    tpm_used: int

    def to_api(self) -> dict[str, dict[str, int | None]]:
        return {
            "rpm": _figure(self.rpm_limit, self.rpm_used),
            "tpm": _figure(self.tpm_limit, self.tpm_used),
        }


def _figure(limit: int | None, used: int) -> dict[str, int | None]:
    return {"limit": limit, "remaining": None if limit is None else max(0, limit - used)}


def settings_limit(settings: Mapping[str, Any], name: str) -> int | None:
    """A positive integer limit from provider settings, else None (unknown)."""
    value = settings.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


@attrs.define
class UpstreamMeter:
    """Sliding one-minute counts per (workspace, provider); idle pairs are dropped."""

    clock: Clock
    _windows: dict[tuple[str, str], _Windows] = attrs.field(factory=dict, init=False)

    def record_request(self, workspace_id: str, provider_id: str) -> None:
        """One request sent upstream (each attempt of a fallback chain counts)."""
        windows = self._windows.setdefault((workspace_id, provider_id), _Windows())
        windows.requests.take(1, self.clock())

    def record_tokens(self, workspace_id: str, provider_id: str, tokens: int) -> None:
        """Tokens a provider reported (or that were estimated) for a finished request."""
        if tokens <= 0:
            return
        windows = self._windows.setdefault((workspace_id, provider_id), _Windows())
        windows.tokens.take(tokens, self.clock())

    def figures(
        self, workspace_id: str, provider_id: str, settings: Mapping[str, Any]
    ) -> ProviderFigures:
        now = self.clock()
        windows = self._windows.get((workspace_id, provider_id))
        return ProviderFigures(
            rpm_limit=settings_limit(settings, "rpm"),
            rpm_used=windows.requests.used(now) if windows else 0,
            tpm_limit=settings_limit(settings, "tpm"),
            tpm_used=windows.tokens.used(now) if windows else 0,
        )

    def sweep(self) -> None:
        now = self.clock()
        for pair in [p for p, w in self._windows.items() if w.is_empty(now)]:
            del self._windows[pair]

    def __len__(self) -> int:
        return len(self._windows)
