"""What the realtime family uses, built once by the composition root: the authenticator
of its WebSocket routes, the settings, the session planner another family provides
(the pipelines family's, over its templates), handed in by the root, and the native
relays (the engine and admission a relayed session goes through)."""

from __future__ import annotations

import attrs

from gateway.kernels.voice.session import SessionPlanner
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.realtime.native import NativeRelays


@attrs.frozen
class RealtimeServices:
    auth: Authenticator
    settings: Settings
    planner: SessionPlanner
    relays: NativeRelays  # sessions relayed to a realtime-native model (native.py)
