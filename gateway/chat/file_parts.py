"""Documents and audio in chat messages: their checks, and the gateway's own file ids
turned into the bytes they name.

A `file` part carries `file_data` (a base64 `data:` URL) or
`file_id`. The id is one of this gateway's files (`POST /v1/files`), so it is never sent
to a vendor, which has no such file: when the files family is mounted it is read from the
caller's workspace and sent inline (another workspace's id is the same 404 as an unknown
one); otherwise the part is refused with a 400 that says to send `file_data`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from gateway.chat.options_input import INPUT_AUDIO_FORMATS
from gateway.kernels.inline_data import BASE64, DOCUMENT_DATA_URL
from gateway.platform.auth import Principal
from gateway.platform.errors import invalid_request

DOCUMENT_TYPES = ("application/pdf", "text/", "image/")
"""What a document part may be: what the vendors that read files all read."""

FileReader = Callable[[Principal, str], Awaitable[tuple[bytes, str, str]]]
"""(bytes, content type, filename) of a file of the caller's workspace; raises the
files family's 404 for an id it does not hold."""


@attrs.define
class AttachedFiles:
    """The files family's reader, plugged in by the composition root when it is
    mounted (None: `file_id` parts are refused)."""

    reader: FileReader | None = None


def check_file_part(part: Mapping[str, Any], where: str) -> None:
    """A `file` part: `file` with exactly one of `file_data` and `file_id`."""
    file = part.get("file")
    if not isinstance(file, dict) or (file.get("file_data") is None) == (
        file.get("file_id") is None
    ):
        raise invalid_request(
            f"'{where}.file' must be an object with one of 'file_data' or 'file_id'.",
            param=f"{where}.file",
            value=file if not isinstance(file, dict) else None,
        )
    if file.get("filename") is not None and not isinstance(file["filename"], str):
        raise invalid_request(
            f"'{where}.file.filename' must be a string.", param=f"{where}.file.filename"
        )
    if file.get("file_id") is not None:
        if not isinstance(file["file_id"], str) or not file["file_id"]:
            raise invalid_request(
                f"'{where}.file.file_id' must be a file id.", param=f"{where}.file.file_id"
            )
        return
    _check_document_data(file.get("file_data"), where)


def _check_document_data(data: Any, where: str) -> None:
    """`file_data`: a base64 `data:` URL of a PDF, a text file or an image."""
    param = f"{where}.file.file_data"
    if not isinstance(data, str) or not re.fullmatch(DOCUMENT_DATA_URL, data):
        raise invalid_request(
            f"'{param}' must be a base64 `data:` URL of a PDF, a text file or an image "
            "(data:application/pdf;base64,...).",
            param=param,
        )


def _check_base64(data: str, param: str) -> None:
    if not re.fullmatch(BASE64, data):
        raise invalid_request(f"'{param}' is not valid base64.", param=param)


def check_audio_part(part: Mapping[str, Any], where: str) -> None:
    """An `input_audio` part: base64 `data` and a `format` of wav or mp3."""
    sound = part.get("input_audio")
    if not isinstance(sound, dict) or not isinstance(sound.get("data"), str):
        raise invalid_request(
            f"'{where}.input_audio' must be an object with base64 'data' and a 'format'.",
            param=f"{where}.input_audio",
        )
    if sound.get("format") not in INPUT_AUDIO_FORMATS:
        raise invalid_request(
            f"'{where}.input_audio.format' must be one of {', '.join(INPUT_AUDIO_FORMATS)}.",
            param=f"{where}.input_audio.format",
            value=sound.get("format"),
        )
    _check_base64(sound["data"], f"{where}.input_audio.data")


def has_file_ids(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any message names one of the gateway's files (most requests: no)."""
    return any(_file_id(part) is not None for _, _, part in _parts(messages))


async def with_file_data(
    messages: Sequence[Mapping[str, Any]], principal: Principal, files: AttachedFiles
) -> tuple[dict[str, Any], ...]:
    """`messages` with every `file_id` part replaced by its file's bytes inline."""
    out = [dict(message) for message in messages]
    for i, j, part in _parts(messages):
        file_id = _file_id(part)
        if file_id is None:
            continue
        if files.reader is None:
            raise invalid_request(
                f"'messages[{i}].content[{j}].file.file_id': this gateway does not serve "
                "files; send the document inline as 'file_data'.",
                param=f"messages[{i}].content[{j}].file.file_id",
                value=file_id,
            )
        data, content_type, filename = await files.reader(principal, file_id)
        if not content_type.startswith(DOCUMENT_TYPES):
            raise invalid_request(
                f"'messages[{i}].content[{j}].file.file_id' names a file of type "
                f"{content_type}; a document part may be a PDF, a text file or an image.",
                param=f"messages[{i}].content[{j}].file.file_id",
                value=file_id,
            )
        content = list(out[i]["content"])
        content[j] = _inline(data, content_type, filename)
        out[i]["content"] = content
    return tuple(out)


def _inline(data: bytes, content_type: str, filename: str) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode("ascii")
    return {
        "type": "file",
        "file": {"file_data": f"data:{content_type};base64,{encoded}", "filename": filename},
    }


def _parts(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int, Any]]:
    return [
        (i, j, part)
        for i, message in enumerate(messages)
        if isinstance(message.get("content"), list)
        for j, part in enumerate(message["content"])
    ]


def _file_id(part: Any) -> str | None:
    if not isinstance(part, dict) or part.get("type") != "file":
        return None
    file_id = (part.get("file") or {}).get("file_id")
    return file_id if isinstance(file_id, str) else None
