"""docs/errors.md lists every error code the gateway can answer with (read from the source
by `tests.operator.error_codes`), each under its own heading, which is the `#<code>` an
error's `doc_url` ends with; and it lists nothing the gateway no longer answers."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from gateway.operator import pages
from tests.operator.error_codes import Found, error_codes

ERRORS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


@pytest.fixture(scope="module")
def found() -> Found:
    return error_codes()


def entries() -> dict[str, str]:
    """Each code heading of the page (`### \\`code\\``) with the text under it."""
    text = ERRORS_PAGE.read_text()
    tokens = MarkdownIt("commonmark").parse(text)
    lines = text.splitlines()
    headings = [
        (opening.map[0], inline.children[0].content if inline.children else "")
        for opening, inline in pairwise(tokens)
        if opening.type == "heading_open"
        and opening.tag == "h3"
        and [c.type for c in inline.children or ()] == ["code_inline"]
        and opening.map is not None
    ]
    bounds = [start for start, _ in headings] + [len(lines)]
    return {
        code: "\n".join(lines[start + 1 : end])
        for (start, code), end in zip(headings, bounds[1:], strict=True)
    }


def test_the_reader_resolves_every_code_position(found: Found) -> None:
    """A code the reader cannot follow would be missed silently."""
    assert found.unresolved == []
    assert {"invalid_api_key", "rate_limit_exceeded", "provider_error"} <= set(found.codes)


def test_every_code_the_gateway_answers_with_has_an_entry(found: Found) -> None:
    missing = {code: where for code, where in found.codes.items() if code not in entries()}
    assert missing == {}, "add these codes to docs/errors.md (code: where it is raised)"


def test_every_entry_is_a_code_the_gateway_answers_with(found: Found) -> None:
    assert sorted(set(entries()) - set(found.codes)) == []


def test_each_entry_gives_the_statuses_the_code_is_raised_with(found: Found) -> None:
    wrong = {}
    for code, statuses in found.statuses.items():
        entry = entries().get(code, "")
        if "(no HTTP status)" in entry:  # sent as a WebSocket event
            continue
        named = {int(s) for s in re.findall(r"\*\*(\d{3})\*\*", entry)}
        if not statuses <= named:
            wrong[code] = sorted(statuses - named)
    assert wrong == {}


def test_each_entry_is_the_anchor_of_its_doc_url() -> None:
    """The served page gives each code heading the id `doc_url` ends with."""
    page = pages.render(ERRORS_PAGE.read_text(), pages.page_names())
    assert set(entries()) <= set(page.anchors)
    assert 'id="invalid_api_key"' in page.html
