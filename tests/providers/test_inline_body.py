"""A JSON body with a clip inline as base64, streamed from the clip's source: the pieces
join into exactly the JSON a whole encoding gives, whatever the clip's size against the
piece size and the 3-byte groups of base64; the length is known up front; every
`pieces()` starts again from the beginning (what a retry, a fallback or a hedge sends)."""

from __future__ import annotations

import base64
import os
from contextlib import aclosing
from typing import Any

import orjson
import pytest

from providers.clip_source import PIECE_BYTES, BytesSource, FileSource
from providers.inline_body import InlineJsonBody, base64_length, inline_json


def payload(data: str) -> dict[str, Any]:
    return {
        "contents": [{"parts": [{"text": 'say "hi"\n'}, {"inlineData": {"data": data}}]}],
        "generationConfig": {"temperature": 0.5},
    }


async def joined(body: InlineJsonBody) -> tuple[bytes, list[int]]:
    async with aclosing(body.pieces()) as pieces:
        parts = [piece async for piece in pieces]
    return b"".join(parts), [len(part) for part in parts]


@pytest.mark.parametrize(
    "size", [0, 1, 2, 3, 4, PIECE_BYTES - 1, PIECE_BYTES, PIECE_BYTES + 1, 3 * PIECE_BYTES + 2]
)
async def test_the_pieces_join_into_the_whole_encoding(size: int) -> None:
    clip = os.urandom(size)
    body = inline_json(payload, BytesSource(clip))
    expected = orjson.dumps(payload(base64.b64encode(clip).decode()))
    first, sizes = await joined(body)
    assert first == expected
    assert body.length == len(expected)
    assert max(sizes) <= base64_length(PIECE_BYTES + 2)  # one piece's encoding at a time
    again, _ = await joined(body)
    assert again == expected


async def test_a_spooled_clip_is_read_in_pieces(tmp_path: Any) -> None:
    clip = os.urandom(2 * PIECE_BYTES + 7)
    path = tmp_path / "spool"
    path.write_bytes(clip)
    fd = os.open(path, os.O_RDONLY)
    try:
        body = inline_json(payload, FileSource(fd, len(clip)))
        data, _ = await joined(body)
    finally:
        os.close(fd)
    assert orjson.loads(data) == payload(base64.b64encode(clip).decode())


def test_the_placeholder_must_be_there_once() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        inline_json(lambda marker: {"a": "no placeholder"}, BytesSource(b"x"))
    with pytest.raises(ValueError, match="exactly once"):
        inline_json(lambda marker: {"a": marker, "b": marker}, BytesSource(b"x"))
