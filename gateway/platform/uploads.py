"""The request class that lets upload routes take bodies larger than every other route.

The app's `MAX_CONTENT_LENGTH` (`Settings.max_body_bytes`, 8 MB) guards the JSON routes.
Upload routes stream their body to disk and enforce the spec's size table themselves while
reading (`gateway.kernels.uploads.receive`), so for them Quart's own guard is raised to the largest
upload the spec allows plus room for the multipart framing; a declared Content-Length
beyond even that is still refused by Quart before a byte is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart_trio.wrappers.request import TrioRequest

# Routes whose POST bodies are streamed uploads.
UPLOAD_PATHS = frozenset({"/v1/files", "/v1/ocr", "/v1/data/documents"})
MULTIPART_OVERHEAD = 1024 * 1024


def upload_request_class(limits: Mapping[str, int]) -> type[TrioRequest]:
    """A request class whose POST bodies on `limits`' paths may reach that many bytes."""

    class UploadAwareRequest(TrioRequest):
        def __init__(self, method: str, scheme: str, path: str, *args: Any, **kwargs: Any):
            limit = limits.get(path) if method == "POST" else None
            if limit is not None:
                kwargs["max_content_length"] = limit
            super().__init__(method, scheme, path, *args, **kwargs)

    return UploadAwareRequest


def file_upload_limits(largest_upload: int) -> dict[str, int]:
    """The files, OCR and data-document routes: the spec's largest upload plus the
    multipart framing (each route then applies its own rows of the size table)."""
    return {path: largest_upload + MULTIPART_OVERHEAD for path in UPLOAD_PATHS}
