"""The documentation pages (`docs/*.md`) rendered to HTML, as the gateway serves them under
`/docs/pages/<name>`.

Served as HTML rather than as `text/markdown`: an error's `doc_url` ends in `#<code>`, and
only an HTML page gives a browser an element with that id to scroll to (a browser shows
Markdown as a plain text file, fragment ignored). Rendering is markdown-it-py (CommonMark,
with GitHub's tables), raw HTML in the Markdown off. Headings get GitHub's ids, so the
same `errors.md#invalid_api_key` works in the repository and on the gateway; links between
pages point at the served pages, and links to files the gateway does not serve (source
code, the benchmark's notes) keep their text and lose the link.

The pages are read from `gateway/docs`, a link to the repository's `docs/` folder that a
built wheel holds as a copy (package data), so an installed gateway serves the pages of its
own version.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import attrs

if TYPE_CHECKING:
    from markdown_it.token import Token

DOCS = Path(__file__).resolve().parent.parent / "docs"
PREFIX = "/docs/pages/"
INDEX = "README"  # docs/README.md, served at PREFIX itself
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
STYLE = (
    "body{margin:0 auto;max-width:60rem;padding:1rem 1.5rem;font:16px/1.5 system-ui,sans-serif;"
    "color:#1f2328}nav{font-size:.9rem;margin-bottom:1rem}code,pre{font:.9em ui-monospace,"
    "monospace;background:#f3f4f6}pre{padding:.75rem;overflow-x:auto}table{border-collapse:"
    "collapse;display:block;overflow-x:auto}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;"
    "vertical-align:top}img{max-width:100%}h1,h2,h3{line-height:1.25}"
)
# The page allows its own stylesheet (by hash) and same-origin images; nothing else runs.
CSP = (
    "default-src 'none'; img-src 'self'; style-src 'sha256-"
    + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
    + "'"
)


@attrs.frozen
class Page:
    """A rendered page: its HTML document and the ids of its headings."""

    html: str
    anchors: tuple[str, ...]


class Library:
    """The pages of one folder, each rendered once per version of its file. Not thread-safe:
    the caller renders one page at a time (a limiter of one)."""

    def __init__(self, docs: Path = DOCS) -> None:
        self.docs = docs
        self._rendered: dict[str, tuple[int, Page]] = {}

    def page(self, name: str) -> Page | None:
        """Page `name`, or None when the folder has no such page (blocking: file reads)."""
        source = page_file(name, self.docs)
        if source is None:
            return None
        version = source.stat().st_mtime_ns
        cached = self._rendered.get(name)
        if cached is None or cached[0] != version:
            cached = (version, render(source.read_text(), page_names(self.docs)))
            self._rendered[name] = cached
        return cached[1]


def page_names(docs: Path = DOCS) -> set[str]:
    """The pages there are (file stems of `docs/*.md`); `README` is the index."""
    return {path.stem for path in docs.glob("*.md")}


def page_file(name: str, docs: Path = DOCS) -> Path | None:
    """The Markdown file of page `name`, or None: only a file of the folder's listing, so a
    name cannot reach outside it."""
    if not _NAME.fullmatch(name) or name not in page_names(docs):
        return None
    return docs / f"{name}.md"


def image_file(name: str, docs: Path = DOCS) -> Path | None:
    """A PNG the pages show (`console.png`), or None."""
    stem, dot, suffix = name.rpartition(".")
    if dot != "." or suffix != "png" or not _NAME.fullmatch(stem):
        return None
    path = docs / name
    return path if path.is_file() else None


def render(markdown: str, pages: set[str]) -> Page:
    """The HTML document of one page; `pages` are the names links may point at."""
    # Imported here: markdown-it (68 modules, ~1 MiB resident) only once a page is asked.
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(markdown)
    anchors = _add_heading_ids(tokens)
    for token in tokens:
        if token.type == "inline" and token.children:
            _relink(token.children, pages)
    body = parser.renderer.render(tokens, parser.options, {})
    title = next((t.content for i, t in enumerate(tokens) if _is_h1(tokens, i)), "Documentation")
    return Page(_document(title, body), tuple(anchors))


def _is_h1(tokens: Sequence[Token], index: int) -> bool:
    return index > 0 and tokens[index - 1].type == "heading_open" and tokens[index - 1].tag == "h1"


def _add_heading_ids(tokens: Sequence[Token]) -> list[str]:
    """GitHub's heading ids (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2`
    for repeats), so a link to a heading works on both renderings."""
    seen: dict[str, int] = {}
    anchors = []
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        slug = slugify(_plain_text(inline))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchor = slug if count == 0 else f"{slug}-{count}"
        opening.attrSet("id", anchor)
        anchors.append(anchor)
    return anchors


def slugify(text: str) -> str:
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _plain_text(inline: Token) -> str:
    return "".join(
        child.content for child in inline.children or () if child.type in ("text", "code_inline")
    )


def _relink(children: list[Token], pages: set[str]) -> None:
    """Links to other pages point at their served address; images in the folder too; a
    link to anything else relative (a source file) keeps its text only."""
    for index, child in enumerate(children):
        if child.type == "image":
            child.attrSet("src", _served(str(child.attrGet("src") or ""), pages) or "")
        elif child.type == "link_open":
            href = str(child.attrGet("href") or "")
            if urlsplit(href).scheme or href.startswith(("/", "#")):
                continue
            served = _served(href, pages)
            if served is None:
                _unlink(children, index)
            else:
                child.attrSet("href", served)


def _served(href: str, pages: set[str]) -> str | None:
    """Where a relative link of a page points on the gateway, or None when it is not
    served."""
    parts = urlsplit(href)
    path = parts.path
    if path.startswith("docs/"):  # written from the repository's root (README.md)
        path = path[len("docs/") :]
    if "/" in path:
        return None
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    stem, _, suffix = path.rpartition(".")
    if suffix == "md" and stem in pages:
        return PREFIX + ("" if stem == INDEX else stem) + fragment
    if suffix == "png" and _NAME.fullmatch(stem):
        return PREFIX + path
    return None


def _unlink(children: list[Token], start: int) -> None:
    """Turn the link opened at `start` into its text: its opening and closing tokens
    render nothing (CommonMark links do not nest)."""
    closing = next(t for t in children[start:] if t.type == "link_close")
    for token in (children[start], closing):
        token.type, token.tag, token.nesting, token.attrs, token.content = "text", "", 0, {}, ""


def _document(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}: AI gateway</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f'<nav><a href="{PREFIX}">Documentation</a> · <a href="/docs">API (Swagger UI)</a>'
        ' · <a href="/openapi.json">OpenAPI document</a></nav>\n'
        f"<main>\n{body}</main>\n</body>\n</html>\n"
    )
