"""Every documented operation, by the endpoint name of its route.

To document a new route, add one `Operation` to its family's module here (or a new module
for a new family, merged below).
"""

from __future__ import annotations

from gateway.operator.apidoc import Operation
from gateway.operator.schemas import (
    analytics,
    audio,
    chat,
    files,
    management,
    models,
    organization,
    platform,
    retrieval,
    status,
)
from gateway.operator.schemas.components import COMPONENTS

OPERATIONS: dict[str, Operation] = {
    **platform.OPERATIONS,
    **chat.OPERATIONS,
    **retrieval.OPERATIONS,
    **models.OPERATIONS,
    **management.OPERATIONS,
    **status.OPERATIONS,
    **organization.OPERATIONS,
    **audio.OPERATIONS,
    **files.OPERATIONS,
    **analytics.OPERATIONS,
}

__all__ = ["COMPONENTS", "OPERATIONS"]
