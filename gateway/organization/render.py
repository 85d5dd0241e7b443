"""The organisation family's response objects (pure)."""

from __future__ import annotations

from typing import Any

from gateway.platform.web import iso as iso
from store.audit import ORGANIZATION_WIDE, AuditEvent
from store.members import MemberRecord
from store.service_accounts import ServiceAccountRecord
from store.workspaces import WorkspaceRecord


def workspace(record: WorkspaceRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "workspace",
        "name": record.name,
        "description": record.description,
        "organization_id": record.organization_id,
        "created_at": iso(record.created_at),
        "request_log_bodies": record.request_log_bodies,
    }


def member(record: MemberRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "member",
        "email": record.email,
        "role": record.role,
        "status": record.status,
        "workspaces": list(record.workspaces),
        "created_at": iso(record.created_at),
        "joined_at": iso(record.joined_at),
    }


def service_account(record: ServiceAccountRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "service_account",
        "name": record.name,
        "role": record.role,
        "workspaces": list(record.workspaces),
        "created_at": iso(record.created_at),
    }


def audit_event(event: AuditEvent) -> dict[str, Any]:
    """The spec's audit event (`id`, `type`, `actor`, `target`, `timestamp`,
    `ip_address`), plus the workspace (null for organisation-wide events) and details."""
    return {
        "id": event.id,
        "type": event.type,
        "actor": {"id": event.actor_id, "email": event.actor_email},
        "target": {"type": event.target_type, "id": event.target_id, "email": event.target_email},
        "timestamp": iso(event.timestamp),
        "ip_address": event.ip_address,
        "workspace_id": None if event.workspace_id == ORGANIZATION_WIDE else event.workspace_id,
        "details": dict(event.details),
    }
