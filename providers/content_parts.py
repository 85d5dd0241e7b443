"""Documents and audio in chat messages, read once for every vendor's adapter (pure).

The chat-completions shapes are `{"type": "file", "file": {"file_data", "filename"}}`
(`file_data` a `data:` URL, or bare base64 named by its filename) and
`{"type": "input_audio", "input_audio": {"data", "format"}}`. The gateway has checked them
(`gateway.chat.input`) and resolved its own file ids to inline data before any adapter
sees them, so here a part always carries its bytes.

Planning sends a document or audio only to a catalogued model that reads it; a
pass-through model (`providers.passthrough`) is given the benefit of the doubt, so an
adapter whose vendor's chat API has no place for a kind of part refuses it by name
(`refuse_unsent_parts`) instead of sending the rest without it.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from providers.errors import InvalidUpstreamRequest

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


MEDIA_PARTS: Mapping[str, str] = {
    "image_url": "images",
    "file": "documents ('file' parts)",
    "input_audio": "audio ('input_audio' parts)",
}
"""The parts beyond text, and what each is in a refusal's words."""


def refuse_unsent_parts(
    provider: str, messages: Sequence[Mapping[str, Any]], sent: Collection[str]
) -> None:
    """`InvalidUpstreamRequest` naming the first part (`messages[0].content[1]`) of a kind
    in `MEDIA_PARTS` but not in `sent`, the kinds this vendor's chat API takes: such a
    part is refused, never dropped in silence."""
    for i, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if isinstance(kind, str) and kind in MEDIA_PARTS and kind not in sent:
                path = f"messages[{i}].content[{j}]"
                raise InvalidUpstreamRequest(
                    provider,
                    f"'{path}' cannot be sent to {provider}: its chat API takes no "
                    f"{MEDIA_PARTS[kind]}; name a model that reads them (see "
                    "/v1/models?capability=file_input or audio_input).",
                    param=path,
                    value=kind,
                )
