"""The endpoint family of a path: the bounded `family` label of metrics and logs.

A table, not the path itself: paths carry ids (`/v1/management/keys/key_...`), and a
label must not grow with them. An unknown path is "other".
"""

from __future__ import annotations

# `/v1/<segment>` families, and `/v1/management/<segment>` families (prefixed).
V1_FAMILIES = frozenset(
    {
        "chat",
        "embeddings",
        "rerank",
        "models",
        "audio",
        "files",
        "ocr",
        "documents",
        "pipelines",
        "realtime",
        "organizations",
        "analytics",
        "sustainability",
        "status",
        "agents",
        "health",
        "responses",
        "completions",
        "images",
        "moderations",
        "batches",
        "console",
    }
)
MANAGEMENT_FAMILIES = frozenset(
    {
        "api-keys",
        "console",
        "keys",
        "providers",
        "routing-rules",
        "rate-limits",
        "analytics",
        "usage",
        "audit",
        "workspaces",
        "organizations",
        "users",
        "budgets",
        "alerts",
        "webhooks",
        "exports",
    }
)
ROOT_FAMILIES = {
    "health": "health",
    "metrics": "metrics",
    "openapi.json": "docs",
    "docs": "docs",
    "console": "console",
}


def family_of(path: str) -> str:
    parts = path.strip("/").split("/", 3)
    if parts[0] != "v1":
        return ROOT_FAMILIES.get(parts[0], "other")
    segment = parts[1] if len(parts) > 1 else ""
    if segment == "management":
        sub = parts[2] if len(parts) > 2 else ""
        return "management_" + sub.replace("-", "_") if sub in MANAGEMENT_FAMILIES else "other"
    return segment if segment in V1_FAMILIES else "other"
