"""Documents and audio in chat messages, read once for every vendor's adapter (pure).

The chat-completions shapes are `{"type": "file", "file": {"file_data", "filename"}}`
(`file_data` a `data:` URL, or bare base64 named by its filename) and
`{"type": "input_audio", "input_audio": {"data", "format"}}`. The gateway has checked them
(`gateway.chat.input`) and resolved its own file ids to inline data before any adapter
sees them, so here a part always carries its bytes.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from typing import Any

import attrs

AUDIO_MEDIA_TYPES: Mapping[str, str] = {"wav": "audio/wav", "mp3": "audio/mp3"}
"""The chat API's audio formats as MIME types (Gemini's spelling, `audio/mp3`)."""
DEFAULT_DOCUMENT_TYPE = "application/pdf"


@attrs.frozen
class Document:
    """A `file` part's content: its MIME type, base64 data and name (may be empty)."""

    media_type: str
    data: str
    filename: str

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    @property
    def is_text(self) -> bool:
        return self.media_type.startswith("text/")


def document(part: Mapping[str, Any]) -> Document:
    """The document of a checked `file` part."""
    file = part.get("file") or {}
    filename = str(file.get("filename") or "")
    data = str(file.get("file_data") or "")
    if data.startswith("data:"):
        header, _, payload = data[5:].partition(",")
        media_type = header.split(";")[0]
        return Document(media_type or _guessed(filename), payload, filename)
    return Document(_guessed(filename), data, filename)


def _guessed(filename: str) -> str:
    guess = mimetypes.guess_type(filename)[0] if filename else None
    return guess or DEFAULT_DOCUMENT_TYPE


def decoded_text(data: str) -> str:
    """A text document's base64 data as text (UTF-8; undecodable bytes replaced)."""
    return base64.b64decode(data).decode("utf-8", errors="replace")


def audio(part: Mapping[str, Any]) -> tuple[str, str]:
    """(MIME type, base64 data) of a checked `input_audio` part."""
    sound = part.get("input_audio") or {}
    media_type = AUDIO_MEDIA_TYPES.get(str(sound.get("format")), "audio/wav")
    return media_type, str(sound.get("data") or "")
