"""What the organisation family (organisations, workspaces, members, service accounts,
people's credentials, the audit log) uses, built once by the composition root."""

from __future__ import annotations

import attrs
import trio

from gateway.kernels.workspace_data import WorkspaceData
from gateway.organization.throttle import LoginThrottle
from gateway.platform.auth import KeyRing
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.bodies import BodyKeepers
from store.db import Database


@attrs.frozen
class OrganizationServices:
    db: Database
    settings: Settings
    auth: Authenticator
    keyring: KeyRing  # service accounts' keys join and leave it
    logins: LoginThrottle
    # Password hashing is CPU and 64 MiB per call: two at a time at most.
    kdf_limiter: trio.CapacityLimiter
    # What a deleted workspace takes with it (stored files, data documents).
    workspace_data: tuple[WorkspaceData, ...] = ()
    # The workspaces whose request log keeps bodies (the switch is a workspace setting).
    bodies: BodyKeepers = attrs.field(factory=BodyKeepers)
