"""What the request log's API uses, built once by the composition root (`gateway.app`):
the callers' authentication, the store, the usage writer's flush (entries are written
within its batch delay), the cipher that opens the bodies kept, and the window in days
(`request_log_days`) past which entries are erased."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from gateway.platform.callers import Authenticator
from store.db import Database
from store.secrets import CredentialCipher


@attrs.frozen
class RequestLogServices:
    auth: Authenticator
    db: Database
    flush: Callable[[], Awaitable[None]]
    cipher: CredentialCipher
    window_days: float
