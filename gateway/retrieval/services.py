"""What the retrieval family (embeddings, rerank) uses, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine


@attrs.frozen
class RetrievalServices:
    engine: Engine
    admission: Admission
    auth: Authenticator
    settings: Settings
