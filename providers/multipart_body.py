"""multipart/form-data request bodies, as vendors' transcription endpoints take them. Pure."""

from __future__ import annotations

import os
from collections.abc import Iterable


def form_body(
    fields: Iterable[tuple[str, str]], file_field: str, filename: str, mime: str, data: bytes
) -> tuple[bytes, str]:
    """The body and its Content-Type for text `fields` plus one file part."""
    boundary = "gw" + os.urandom(12).hex()
    parts: list[bytes] = []
    for name, value in fields:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode()
            + b"\r\n"
        )
    safe_name = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{safe_name}"\r\nContent-Type: {mime}\r\n\r\n'.encode()
        + data
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
