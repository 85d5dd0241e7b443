"""Every management route with the role action it needs and a harmless request for it.

Harmless: path ids that exist nowhere and bodies that fail validation, so a caller the
role table lets through gets a 200, 400 or 404 and changes nothing, and one it stops gets
403. `{id}` is replaced by the caller's choice of id.
"""

from __future__ import annotations

from typing import Any

Route = tuple[str, str, str, dict[str, Any] | None]

M = "/v1/management"
ROUTES: tuple[Route, ...] = (
    ("GET", f"{M}/api-keys", "view_configuration", None),
    ("POST", f"{M}/api-keys", "create_api_keys", {}),
    ("GET", f"{M}/api-keys/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/api-keys/{{id}}", "create_api_keys", {}),
    ("POST", f"{M}/api-keys/{{id}}/rotate", "create_api_keys", {}),
    ("POST", f"{M}/api-keys/{{id}}/revoke", "revoke_api_keys", None),
    ("DELETE", f"{M}/api-keys/{{id}}", "revoke_api_keys", None),
    ("GET", f"{M}/providers", "view_configuration", None),
    ("POST", f"{M}/providers", "configure_providers", {}),
    ("GET", f"{M}/providers/health", "view_configuration", None),
    ("GET", f"{M}/providers/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/providers/{{id}}", "configure_providers", {}),
    ("POST", f"{M}/providers/{{id}}/credentials", "configure_providers", {}),
    ("POST", f"{M}/providers/{{id}}/test", "configure_providers", None),
    ("POST", f"{M}/providers/{{id}}/disable", "configure_providers", None),
    ("POST", f"{M}/providers/{{id}}/enable", "configure_providers", None),
    ("DELETE", f"{M}/providers/{{id}}", "configure_providers", None),
    ("GET", f"{M}/routing-rules", "view_configuration", None),
    ("POST", f"{M}/routing-rules", "edit_routing_rules", {}),
    ("POST", f"{M}/routing-rules/test", "view_configuration", {}),
    ("GET", f"{M}/routing-rules/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/routing-rules/{{id}}", "edit_routing_rules", {}),
    ("POST", f"{M}/routing-rules/{{id}}/enable", "edit_routing_rules", None),
    ("POST", f"{M}/routing-rules/{{id}}/disable", "edit_routing_rules", None),
    ("DELETE", f"{M}/routing-rules/{{id}}", "edit_routing_rules", None),
    ("GET", f"{M}/workspaces", "view_analytics", None),
    ("POST", f"{M}/workspaces", "manage_workspaces", {}),
    ("GET", f"{M}/workspaces/{{id}}", "view_analytics", None),
    ("PATCH", f"{M}/workspaces/{{id}}", "manage_workspaces", {}),
    ("DELETE", f"{M}/workspaces/{{id}}", "manage_workspaces", None),
    ("GET", f"{M}/members", "view_configuration", None),
    ("POST", f"{M}/members", "invite_members", {}),
    ("PATCH", f"{M}/members/{{id}}", "invite_members", {}),
    ("DELETE", f"{M}/members/{{id}}", "remove_members", None),
    ("GET", f"{M}/service-accounts", "view_configuration", None),
    ("POST", f"{M}/service-accounts", "create_api_keys", {}),
    ("GET", f"{M}/service-accounts/{{id}}", "view_configuration", None),
    ("DELETE", f"{M}/service-accounts/{{id}}", "revoke_api_keys", None),
    ("GET", f"{M}/audit-log", "view_audit_log", None),
    ("GET", f"{M}/request-log", "view_analytics", None),
    ("GET", f"{M}/request-log/{{id}}", "view_analytics", None),
    ("GET", f"{M}/console/usage", "view_analytics", None),
    ("GET", f"{M}/me", "view_analytics", None),
    ("GET", f"{M}/analytics/usage", "view_analytics", None),
    ("GET", f"{M}/analytics/usage/models", "view_analytics", None),
    ("GET", f"{M}/analytics/usage/api-keys", "view_analytics", None),
    ("GET", f"{M}/analytics/costs", "view_analytics", None),
    ("GET", f"{M}/analytics/performance", "view_analytics", None),
    ("GET", f"{M}/analytics/errors", "view_analytics", None),
    ("GET", f"{M}/analytics/cache", "view_analytics", None),
    ("GET", f"{M}/analytics/realtime", "view_analytics", None),
    ("POST", f"{M}/analytics/export", "export_data", {"format": "xlsx"}),
    ("GET", f"{M}/analytics/export", "export_data", None),
    ("GET", f"{M}/analytics/export/{{id}}", "export_data", None),
    ("GET", f"{M}/analytics/export/{{id}}/download", "export_data", None),
    ("GET", f"{M}/voice-mappings", "view_configuration", None),
    ("POST", f"{M}/voice-mappings", "configure_providers", {}),
    ("GET", f"{M}/voice-mappings/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/voice-mappings/{{id}}", "configure_providers", {}),
    ("PUT", f"{M}/voice-mappings/{{id}}", "configure_providers", {}),
    ("DELETE", f"{M}/voice-mappings/{{id}}", "configure_providers", None),
    # pipeline templates (workspace configuration, as voice mappings)
    ("GET", f"{M}/pipeline-templates", "view_configuration", None),
    ("POST", f"{M}/pipeline-templates", "configure_providers", {}),
    ("GET", f"{M}/pipeline-templates/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/pipeline-templates/{{id}}", "configure_providers", {}),
    ("PUT", f"{M}/pipeline-templates/{{id}}", "configure_providers", {}),
    ("DELETE", f"{M}/pipeline-templates/{{id}}", "configure_providers", None),
    ("GET", f"{M}/incidents", "view_configuration", None),
    ("POST", f"{M}/incidents", "configure_providers", {}),
    ("GET", f"{M}/incidents/{{id}}", "view_configuration", None),
    ("PATCH", f"{M}/incidents/{{id}}", "configure_providers", {}),
    ("POST", f"{M}/incidents/{{id}}/resolve", "configure_providers", None),
    # sustainability reports (issue 16): read-only views of the workspace's usage
    ("GET", "/v1/sustainability/dashboard", "view_analytics", None),
    ("GET", "/v1/sustainability/efficiency-score", "view_analytics", None),
    ("GET", "/v1/sustainability/optimization-opportunities", "view_analytics", None),
    ("GET", "/v1/sustainability/optimization-summary", "view_analytics", None),
    # Agents (issue 18): agents are keys, so the key actions guard them.
    ("GET", "/v1/mcp/agents", "view_configuration", None),
    ("POST", "/v1/mcp/agents", "create_api_keys", {}),
    ("GET", "/v1/mcp/agents/{id}", "view_configuration", None),
    ("PATCH", "/v1/mcp/agents/{id}", "create_api_keys", {}),
    ("DELETE", "/v1/mcp/agents/{id}", "create_api_keys", None),
    ("POST", "/v1/mcp/agents/{id}/suspend", "revoke_api_keys", None),
    ("POST", "/v1/mcp/agents/{id}/resume", "revoke_api_keys", None),
    ("GET", "/v1/mcp/agents/{id}/usage", "view_configuration", None),
    ("GET", "/v1/mcp/agents/{id}/alerts", "view_configuration", None),
    ("POST", "/v1/mcp/agents/{id}/alerts", "create_api_keys", {}),
    ("GET", "/v1/mcp/agents/{id}/alerts/{id}", "view_configuration", None),
    ("DELETE", "/v1/mcp/agents/{id}/alerts/{id}", "create_api_keys", None),
    ("GET", f"{M}/agent-limits", "view_configuration", None),
    ("PUT", f"{M}/agent-limits", "manage_billing", {"cost_daily": "high"}),
    ("GET", f"{M}/organization", "view_configuration", None),
    ("PATCH", f"{M}/organization", "manage_billing", {}),
)
"""(method, path, action, body): every management route but the organisations list,
which takes a user token whatever the role, and `ANY_CALLER`'s."""

# Routes any valid credential may call: a key reads its own limits there (the providers
# section of the answer needs `view_analytics`).
ANY_CALLER: tuple[tuple[str, str], ...] = (("GET", f"{M}/rate-limits"),)
