"""The request class that lets upload routes take bodies larger than every other route.

The app's `MAX_CONTENT_LENGTH` (`Settings.max_body_bytes`, 8 MB) guards the JSON routes.
Upload routes stream their body to disk and enforce the spec's size table themselves while
reading (`gateway.uploads.receive`), so for them Quart's own guard is raised to the largest
upload the spec allows plus room for the multipart framing; a declared Content-Length
beyond even that is still refused by Quart before a byte is read.
"""

from __future__ import annotations

from typing import Any

from quart_trio.wrappers.request import TrioRequest

# Routes whose POST bodies are streamed uploads.
UPLOAD_PATHS = frozenset({"/v1/files", "/v1/ocr"})
MULTIPART_OVERHEAD = 1024 * 1024


def upload_request_class(largest_upload: int) -> type[TrioRequest]:
    class UploadAwareRequest(TrioRequest):
        def __init__(self, method: str, scheme: str, path: str, *args: Any, **kwargs: Any):
            if method == "POST" and path in UPLOAD_PATHS:
                kwargs["max_content_length"] = largest_upload + MULTIPART_OVERHEAD
            super().__init__(method, scheme, path, *args, **kwargs)

    return UploadAwareRequest
