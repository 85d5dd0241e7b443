"""The sentence splitter that feeds speech synthesis while a language model still writes.

Pure and I/O-free: `SentenceSplitter.feed` takes the model's text as it arrives (tokens of
any size) and returns the sentences it completed; `flush` returns what is left when the
model is done. A sentence ends at `.`, `!`, `?`, `…` or `;` (closing quotes and brackets
kept with it) *followed by whitespace*, or at a line break, so "3.5" and "e.g." inside a
sentence do not cut it, and the boundary is known the moment the space arrives rather
than when the next word does. Very short pieces ("Hi.") are held and joined to the next
so a synthesiser is not asked for a syllable.
"""

from __future__ import annotations

import re

# Abbreviations that end in a dot without ending the sentence (lower-case, dot included).
ABBREVIATIONS = frozenset(
    {"mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "vs.", "e.g.", "i.e.", "etc.", "no.", "jr."}
)
MIN_CHARS = 4  # a sentence shorter than this is joined to the next
_BOUNDARY = re.compile(r"""[.!?\u2026;]+["'\u201d\u2019)\]]*(?=\s)|\n+""")


class SentenceSplitter:
    """Accumulates text and hands out complete sentences (see the module docstring)."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        """The sentences that `text` completed, in order, stripped."""
        self._pending += text
        sentences: list[str] = []
        start = 0
        for match in _BOUNDARY.finditer(self._pending):
            piece = self._pending[start : match.end()]
            if _ends_in_abbreviation(piece) or len(piece.strip()) < MIN_CHARS:
                continue
            if piece.strip():
                sentences.append(piece.strip())
            start = match.end()
        self._pending = self._pending[start:]
        return sentences

    def flush(self) -> list[str]:
        """What is left when the text is complete (at most one sentence)."""
        rest, self._pending = self._pending.strip(), ""
        return [rest] if rest else []


def _ends_in_abbreviation(piece: str) -> bool:
    words = piece.rstrip().rsplit(None, 1)
    return bool(words) and words[-1].lower() in ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Every sentence of a whole text (what a non-streamed caller needs)."""
    splitter = SentenceSplitter()
    return splitter.feed(text) + splitter.flush()
