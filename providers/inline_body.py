"""JSON request bodies that carry a clip inline as a base64 string, streamed from where
the clip lives (an upload's spool) instead of being built whole in memory. Pure framing.

Gemini takes audio as `{"inlineData": {"mimeType": ..., "data": "<base64>"}}` inside the
JSON of `generateContent`. The JSON around the string is small and built once; the
string itself is encoded piece by piece as the body is sent: each piece of the clip is
cut to a multiple of 3 bytes (what is left over waits for the next piece), so the
encoded pieces join into one valid base64 string with no padding in the middle. Its
length, 4 * ceil(size / 3), is known before the first byte, so the body goes out with a
Content-Length like a multipart one (`providers.multipart_body`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import Any

import attrs
import orjson

from providers.clip_source import ClipSource


def inline_json(build: Callable[[str], Mapping[str, Any]], source: ClipSource) -> InlineJsonBody:
    """The JSON of `build(placeholder)` with the placeholder string replaced by the
    base64 of `source`, as a `providers.upstream.StreamedBody`.

    `build` returns the payload with the given placeholder where the base64 goes (the
    placeholder is random, so it cannot clash with the rest of the payload).
    """
    marker = "clip-" + os.urandom(16).hex()
    encoded = orjson.dumps(build(marker))
    head, found, tail = encoded.partition(marker.encode())
    if not found or marker.encode() in tail:
        raise ValueError("the payload must hold the placeholder exactly once")
    return InlineJsonBody(head, source, tail)


def base64_length(size: int) -> int:
    """Characters of the padded base64 of `size` bytes."""
    return 4 * ((size + 2) // 3)


@attrs.frozen(slots=True)
class InlineJsonBody:
    """`head`, the base64 of the clip, `tail`: what `orjson.dumps` of the whole payload
    would give (base64 needs no JSON escaping).

    Each `pieces()` starts from the beginning (a retry, a fallback or a hedge sends the
    whole body again); at most one piece of the clip, and its encoding, are held at a
    time.
    """

    head: bytes = attrs.field(repr=False)
    source: ClipSource = attrs.field(repr=False)
    tail: bytes = attrs.field(repr=False)

    @property
    def length(self) -> int:
        return len(self.head) + base64_length(self.source.size) + len(self.tail)

    async def pieces(self) -> AsyncGenerator[bytes, None]:
        yield self.head
        held = b""
        async with aclosing(self.source.pieces()) as clip_pieces:
            async for piece in clip_pieces:
                data = held + piece
                cut = len(data) - len(data) % 3
                held = data[cut:]
                if cut:
                    yield base64.b64encode(data[:cut])
        if held:
            yield base64.b64encode(held)  # the end: the only padding
        yield self.tail
