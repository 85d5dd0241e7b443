"""Every documented operation, by the endpoint name of its route.

To document a new route, add one `Operation` to its family's module here (or a new module
for a new family, merged below).
"""

from __future__ import annotations

from gateway.operator.apidoc import Operation
from gateway.operator.schemas.components import COMPONENTS

OPERATIONS: dict[str, Operation] = {}

__all__ = ["COMPONENTS", "OPERATIONS"]
