"""One of the gateway's own endpoints called in process, as a caller would call it over
HTTP: the caller's principal and a request body in, the answer's body out (or its
`ApiError`). Files and data documents embed and rerank this way, in their uploader's
name, so the uploader's limits and usage records apply; the root binds the endpoint of
the family that serves it (`gateway.app.assembly`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gateway.platform.auth import Principal

Endpoint = Callable[[Principal, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
