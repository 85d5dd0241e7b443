"""What the Responses family uses, built once by the composition root (`gateway.app`).

Chat's path with a dialect in front (`serve_chat`, chat's own, handed in by the root: the
family never imports chat), the stored responses (kept in memory, written behind), the
store they are erased from, the usage log for the refusals it records itself, the
authenticator of its Quart routes, how long a stored response is kept, and the
background responses running in this process.
"""

from __future__ import annotations

import attrs

from gateway.kernels.dialects import ServeChat
from gateway.platform.callers import Authenticator
from gateway.responses.background_runs import BackgroundResponses
from gateway.upstream.usage import UsageLog
from store.db import Database
from store.responses import ResponseKeeper


@attrs.frozen
class ResponsesServices:
    serve_chat: ServeChat
    keeper: ResponseKeeper
    db: Database
    usage: UsageLog
    auth: Authenticator
    retention_days: float
    background: BackgroundResponses
