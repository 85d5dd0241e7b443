"""What the OCR family uses, built once by the composition root."""

from __future__ import annotations

import attrs
import trio

from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from store.blobs import BlobStore


@attrs.frozen
class OcrServices:
    engine: Engine
    admission: Admission
    auth: Authenticator
    settings: Settings
    blobs: BlobStore  # where an upload waits while it is read (removed when done)
    # Pages the local engine reads at once (Tesseract is CPU-bound: the machine's cores).
    pages: trio.CapacityLimiter
