"""Attribution a client attaches to a request through headers, for analytics."""

from __future__ import annotations

from collections.abc import Mapping

import attrs


@attrs.frozen
class RequestLabels:
    """Attribution from the request headers, for analytics."""

    project: str | None = None
    team: str | None = None
    tags: tuple[str, ...] = ()
    trace_id: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RequestLabels:
        tags = headers.get("x-service-tags") or ""
        return cls(
            project=headers.get("x-service-project") or None,
            team=headers.get("x-service-team") or None,
            tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
            trace_id=headers.get("x-service-trace-id") or None,
        )
