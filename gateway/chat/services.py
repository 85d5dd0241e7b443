"""What the chat family uses, built once by the composition root (`gateway.app`).

Chat plans over the engine's catalog and providers (and their observed latency, for
`auto`), the workspaces' routing rules (which it also manages, with the store and the
authenticator), and the response cache (in this process, or on the shared server when
several workers run). Nothing else reaches it.
"""

from __future__ import annotations

import attrs

from gateway.chat.cache import ResponseCache
from gateway.chat.cache.shared import SharedResponseCache
from gateway.chat.file_parts import AttachedFiles
from gateway.chat.plan_cache import PlanCache
from gateway.chat.resolutions import Resolutions
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.bodies import BodyKeepers
from gateway.upstream.engine import Engine
from gateway.upstream.routing.book import RuleBook
from store.db import Database


@attrs.frozen
class ChatServices:
    engine: Engine
    admission: Admission
    rules: RuleBook  # the workspaces' routing rules, managed by `rule_routes`
    cache: ResponseCache
    settings: Settings
    db: Database
    auth: Authenticator
    # Several workers: the answers live on the shared server (None: `cache`, per process).
    shared_cache: SharedResponseCache | None = None
    # The workspaces whose request log keeps the bodies (none by default).
    bodies: BodyKeepers = attrs.field(factory=BodyKeepers)
    # The routing of a named model without a rule, made once per provider set.
    resolutions: Resolutions = attrs.field(factory=Resolutions)
    # What the routed chain narrows to for each shape of request (`plan_cache`).
    plans: PlanCache = attrs.field(factory=PlanCache)
    # The files family's reader of `file_id` parts, when it is mounted.
    attachments: AttachedFiles = attrs.field(factory=AttachedFiles)
