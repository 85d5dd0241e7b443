"""What sending webhooks needs, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.kernels.webhooks.hub import StatusHub
from gateway.platform.config import Settings
from store.db import Database
from store.secrets import CredentialCipher


@attrs.frozen
class Webhooks:
    db: Database
    cipher: CredentialCipher  # the subscriptions' signing secrets are stored encrypted
    settings: Settings
    hub: StatusHub  # the bounded queue to the delivery worker
