"""The endpoint family of a path: the bounded `family` label of metrics and logs.

A table, not the path itself: paths carry ids (`/v1/management/keys/key_...`), and a
label must not grow with them. An unknown path is "other". The agents' routes live
under `/v1/mcp/agents` and their MCP server at `/v1/mcp`: two families of their own; so
are voice pipelines (`/v1/audio/pipelines`) and voice sessions (`/v1/audio/sessions`,
the realtime family's) beside audio.
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
        "mcp",
        "messages",
        "auth",
        "alerts",
        "billing",
    }
)
# `/v1/<segment>` paths whose family has another name.
V1_RENAMED = {"data": "documents"}
# `/v1/<segment>/<sub>` paths that are a family of their own.
V1_NESTED = {
    ("mcp", "agents"): "agents",
    # Voice pipelines and voice sessions are served under `/v1/audio/` but are families of
    # their own (`gateway.pipelines`, `gateway.realtime`), each labelled with its vendors.
    ("audio", "pipelines"): "pipelines",
    ("audio", "sessions"): "realtime",
}
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
        "request-log",
        "members",
        "service-accounts",
        "audit-log",
        "voice-mappings",
        "pipeline-templates",
        "incidents",
        "agent-limits",
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
    sub = parts[2] if len(parts) > 2 else ""
    if segment == "management":
        return "management_" + sub.replace("-", "_") if sub in MANAGEMENT_FAMILIES else "other"
    nested = V1_NESTED.get((segment, sub))
    if nested is not None:
        return nested
    segment = V1_RENAMED.get(segment, segment)
    return segment if segment in V1_FAMILIES else "other"
