"""The three chunking strategies of data documents, as tables: where chunks end, how they
overlap, their token counts (from the real tokenizer) and their section headers."""

from __future__ import annotations

import itertools

import pytest

from gateway.kernels.text import PAGE_SEPARATOR
from gateway.kernels.text.chunking import Piece, chunk_document, count_tokens
from store.files import Page

SECTIONS = """# Billing

Invoices are sent monthly. Payment is due in thirty days. Late fees apply after that.

Refunds

Refunds take five business days. They go back to the original card.

Security
========

All data is encrypted at rest. Keys rotate every ninety days."""

PARAGRAPHS = "\n\n".join(
    f"Paragraph {n} says something about topic {n}. It has a second sentence too."
    for n in range(1, 7)
)


def chunks(text: str, strategy: str, size: int, overlap: int, pages: int = 1) -> list[Piece]:
    return chunk_document(
        [Page(n, text) for n in range(1, pages + 1)], strategy=strategy, size=size, overlap=overlap
    )


def full(text: str, pages: int = 1) -> str:
    return PAGE_SEPARATOR.join([text] * pages)


@pytest.mark.parametrize("strategy", ["semantic", "fixed", "paragraph"])
@pytest.mark.parametrize(("size", "overlap"), [(10, 0), (12, 4), (40, 10), (512, 50)])
def test_every_strategy_keeps_offsets_counts_and_size(
    strategy: str, size: int, overlap: int
) -> None:
    for text in (SECTIONS, PARAGRAPHS):
        pieces = chunks(text, strategy, size, overlap, pages=2)
        whole = full(text, pages=2)
        assert pieces
        for piece in pieces:
            assert whole[piece.start_char : piece.end_char] == piece.text
            assert piece.tokens == count_tokens(piece.text)
            assert piece.tokens <= size
        assert {p.page for p in pieces} == {1, 2}


def test_fixed_windows_overlap_by_exactly_the_overlap() -> None:
    pieces = chunks(PARAGRAPHS, "fixed", 20, 5)
    assert [p.tokens for p in pieces[:-1]] == [20] * (len(pieces) - 1)
    for before, after in itertools.pairwise(pieces):
        shared = before.end_char - after.start_char
        assert shared > 0
        assert count_tokens(PARAGRAPHS[after.start_char : before.end_char]) == 5
    assert all(p.section_header is None for p in pieces)


def test_fixed_windows_cut_inside_paragraphs() -> None:
    pieces = chunks(PARAGRAPHS, "fixed", 20, 0)
    assert any(not p.text.endswith(".") for p in pieces[:-1])


def test_paragraph_chunks_hold_whole_paragraphs_packed_to_the_size() -> None:
    paragraphs = PARAGRAPHS.split("\n\n")
    per_paragraph = count_tokens(paragraphs[0])
    pieces = chunks(PARAGRAPHS, "paragraph", 2 * per_paragraph + 1, 10)
    assert [p.text for p in pieces] == [
        "\n\n".join(paragraphs[i : i + 2]) for i in range(0, len(paragraphs), 2)
    ]
    # Too small for one paragraph: the paragraph is cut into windows, never mixed.
    small = chunks(PARAGRAPHS, "paragraph", 10, 2)
    assert all("\n\n" not in p.text for p in small)


def test_semantic_chunks_follow_sections_and_record_their_headers() -> None:
    pieces = chunks(SECTIONS, "semantic", 512, 50)
    assert [p.section_header for p in pieces] == ["Billing", "Refunds", "Security"]
    assert pieces[0].text.startswith("# Billing") and pieces[0].text.endswith("after that.")
    assert pieces[2].text.endswith("every ninety days.")


def test_semantic_chunks_end_on_sentences_and_overlap_by_whole_sentences() -> None:
    pieces = chunks(SECTIONS, "semantic", 16, 8)
    billing = [p for p in pieces if p.section_header == "Billing"]
    assert len(billing) >= 2
    for piece in pieces:
        assert piece.text.rstrip().endswith((".", "Refunds", "========"))
    # The next chunk of a section starts with the last sentence of the one before.
    first, second = billing[0], billing[1]
    assert first.text == "# Billing\n\nInvoices are sent monthly."
    assert second.text.startswith("Invoices are sent monthly. ")
    assert second.start_char < first.end_char
    no_overlap = chunks(SECTIONS, "semantic", 16, 0)
    starts = [p.start_char for p in no_overlap]
    ends = [p.end_char for p in no_overlap]
    assert all(s >= e for s, e in zip(starts[1:], ends, strict=False))


def test_a_markdown_heading_needs_no_blank_line_after_it() -> None:
    """As text extracted from a PDF often comes: `# Title` directly above its text."""
    text = "# Terms\nThe tenant pays monthly.\n## Fees\nFees are due on the first.\n#hashtag"
    pieces = chunks(text, "semantic", 100, 0)
    assert [(p.section_header, p.text) for p in pieces] == [
        ("Terms", "# Terms\nThe tenant pays monthly."),
        ("Fees", "## Fees\nFees are due on the first.\n#hashtag"),
    ]
    # The short line under a heading is its body, not a title-like line standing alone.
    pieces = chunks("# Notes\nEither party", "semantic", 100, 0)
    assert [(p.section_header, p.text) for p in pieces] == [("Notes", "# Notes\nEither party")]


def test_semantic_headers_carry_across_pages() -> None:
    pieces = chunk_document(
        [Page(1, "# Terms\n\nThe first page text."), Page(2, "More text on page two.")],
        strategy="semantic",
        size=100,
        overlap=0,
    )
    assert [(p.page, p.section_header) for p in pieces] == [(1, "Terms"), (2, "Terms")]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown chunking strategy"):
        chunks("text", "sentences", 100, 0)
