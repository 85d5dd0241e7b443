"""Anthropic `document` blocks as chat's `file` parts (pure).

A base64 PDF travels as `file_data`; a plain-text source as a text file; a `file` source
names one of the gateway's own files (`POST /v1/files`), read from the caller's workspace
by chat (`gateway.chat.file_parts`). A `url` source is refused: the gateway fetches no
URL on a client's behalf (docs/messages-api.md, Choices), and `content` sources and
citations have no equivalent on the other vendors. The block's `context` goes before the
document as text, and its `title` is the file's name.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from gateway.platform.errors import invalid_request

DEFAULT_NAMES = {"application/pdf": "document.pdf", "text/plain": "document.txt"}


def document_parts(block: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The chat parts of the `document` block at `where` (`messages.0.content.1`)."""
    citations = block.get("citations")
    if isinstance(citations, dict) and citations.get("enabled"):
        raise invalid_request(
            f"{where}.citations: citations are not supported; send the block without them",
            param=f"{where}.citations",
            value=citations,
        )
    parts: list[dict[str, Any]] = []
    context = block.get("context")
    if isinstance(context, str) and context:
        parts.append({"type": "text", "text": context})
    parts.append({"type": "file", "file": _file(block, where)})
    return parts


def _file(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    title = block.get("title")
    if kind == "file" and isinstance(source, dict) and isinstance(source.get("file_id"), str):
        return {"file_id": source["file_id"]}
    if kind == "url":
        raise invalid_request(
            f"{where}.source: URL sources are not fetched by this gateway; send the PDF as a "
            "base64 source",
            param=f"{where}.source",
            value=source,
        )
    data = _data(source, kind, where)
    media_type = "application/pdf" if kind == "base64" else "text/plain"
    name = title if isinstance(title, str) and title else DEFAULT_NAMES[media_type]
    return {"file_data": f"data:{media_type};base64,{data}", "filename": name}


def _data(source: Any, kind: Any, where: str) -> str:
    """The base64 of a `base64` PDF source or of a `text` source's text."""
    if not isinstance(source, dict) or not isinstance(source.get("data"), str):
        kind = None
    if kind == "base64" and source.get("media_type") == "application/pdf":
        return str(source["data"])
    if kind == "text" and source.get("media_type", "text/plain") == "text/plain":
        return base64.b64encode(str(source["data"]).encode()).decode("ascii")
    raise invalid_request(
        f"{where}.source: Input should be a base64 PDF, text, url or file document source",
        param=f"{where}.source",
        value=kind,
    )
