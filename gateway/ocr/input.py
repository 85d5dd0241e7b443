"""POST /v1/ocr's form fields, validated into `OcrParams`: pure, no I/O.

Multipart fields are text: booleans are `true`/`false`; `language_hints` is a JSON array
of codes or a comma-separated list; `pages` is `all`, a page, a range (`1-5`) or a list of
them (`1,3,5-7`), checked against the document once its page count is known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

import attrs
import orjson

from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import NOT_NULL, Choices, Doc, Format, Length, Pattern

OUTPUT_FORMATS = ("json", "text", "markdown")
# Types and limits from the spec's size table (OCR rows).
MB = 1024 * 1024
OCR_KINDS = {"pdf": 50 * MB, "tiff": 50 * MB, "png": 20 * MB, "jpg": 20 * MB, "bmp": 20 * MB,
             "webp": 20 * MB}  # fmt: skip
DEFAULT_MODEL = "mistral-ocr-latest"
LOCAL_MODEL = "local"


# Multipart fields are text: a flag is one of these (any case).
Flag = Annotated[str | None, Choices(("true", "false", "1", "0")), NOT_NULL, Doc("Default true")]
_PAGE = "0*[1-9][0-9]*"  # pages count from 1
_RANGE = f"{_PAGE}(?:[ \\t]*-[ \\t]*{_PAGE})?"
# A language code (`en`, `pt-BR`): ASCII letters and dashes, 2-8 characters.
_CODE = "[A-Za-z][A-Za-z-]{1,7}"
_LIST = f"[ \\t]*{_CODE}[ \\t]*(?:,[ \\t]*{_CODE}[ \\t]*)*"
_ARRAY = f'[ \\t]*\\[[ \\t]*"{_CODE}"[ \\t]*(?:,[ \\t]*"{_CODE}"[ \\t]*)*\\][ \\t]*'
_NONE = "[ \\t]*(?:\\[[ \\t]*\\])?[ \\t]*"
LANGUAGES = Pattern(
    f"^(?:{_NONE}|{_LIST}|{_ARRAY})$", "language codes, a JSON array or comma-separated"
)
PAGES = Pattern(
    f"^[ \\t]*(?:[Aa][Ll][Ll]|{_RANGE}(?:[ \\t]*,[ \\t]*{_RANGE})*)?[ \\t]*$",
    "'all', a page, or ranges such as '1-5'",
)


@attrs.frozen(kw_only=True)
class OcrParts:
    """The parts of an OCR request (multipart/form-data)."""

    file: Annotated[
        str, Format("binary"), Length(least=1), Doc("PDF, PNG, JPEG, TIFF, BMP or WebP")
    ]
    extract_tables: Flag = None
    extract_forms: Flag = None
    pages: Annotated[
        str | None, PAGES, NOT_NULL, Doc("`all` (default), a page, `1-5`, or `1,3,5-7`")
    ] = None
    language_hints: Annotated[
        str | None,
        LANGUAGES,
        NOT_NULL,
        Doc('Language codes: a JSON array (`["en", "de"]`) or comma-separated (`en,de`)'),
    ] = None
    output_format: Annotated[str | None, Choices(OUTPUT_FORMATS), NOT_NULL] = None
    model: Annotated[
        str | None, NOT_NULL, Doc(f"Default {DEFAULT_MODEL}; `{LOCAL_MODEL}` reads in-process")
    ] = None


@attrs.frozen(kw_only=True)
class OcrParams:
    extract_tables: bool = True
    extract_forms: bool = True
    pages: str = "all"
    language_hints: tuple[str, ...] = ()
    output_format: str = "json"
    model: str = DEFAULT_MODEL


def parse_fields(fields: Mapping[str, str]) -> OcrParams:
    known = {"extract_tables", "extract_forms", "pages", "language_hints", "output_format",
             "model"}  # fmt: skip
    unknown = sorted(set(fields) - known)
    if unknown:
        raise invalid_request(f"Unknown field '{unknown[0]}'.", param=unknown[0])
    output = fields.get("output_format", "json")
    if output not in OUTPUT_FORMATS:
        raise invalid_request(
            f"'output_format' must be one of {', '.join(OUTPUT_FORMATS)}.",
            param="output_format",
            value=output,
        )
    pages = fields.get("pages", "all").strip(" \t") or "all"
    if pages.lower() == "all":
        pages = "all"
    if pages != "all":
        select_pages(pages, None)  # the syntax now, the range once the page count is known
    return OcrParams(
        extract_tables=_boolean(fields, "extract_tables"),
        extract_forms=_boolean(fields, "extract_forms"),
        pages=pages,
        language_hints=_languages(fields.get("language_hints")),
        output_format=output,
        model=fields.get("model") or DEFAULT_MODEL,
    )


def _boolean(fields: Mapping[str, str], name: str) -> bool:
    raw = fields.get(name, "true").strip().lower()
    if raw not in ("true", "false", "1", "0"):
        raise invalid_request(f"'{name}' must be true or false.", param=name, value=raw)
    return raw in ("true", "1")


def _languages(raw: str | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not LANGUAGES.matches(raw):
        parts = [part.strip(" \t") for part in raw.split(",")]
        wrong = next((p for p in parts if not re.fullmatch(_CODE, p)), raw)
        raise invalid_request(
            f"'{wrong}' is not a language code: 'language_hints' takes codes such as 'en' "
            "or 'pt-BR', as a JSON array or comma-separated.",
            param="language_hints",
            value=wrong,
        )
    if raw.lstrip(" \t").startswith("["):
        return tuple(orjson.loads(raw))
    return tuple(part.strip(" \t") for part in raw.split(",") if part.strip(" \t"))


def select_pages(spec: str, total: int | None) -> tuple[int, ...] | None:
    """The 1-based pages `spec` names (None for all); 400 for bad syntax, and with `total`
    for a page outside the document. Without `total` only the syntax is checked (the
    answer is empty): expanding `1-999999999999` before the page count is known would
    exhaust memory."""
    if spec == "all":
        return None
    chosen: list[int] = []
    for part in spec.split(","):
        first, dash, last = (side.strip(" \t") for side in part.partition("-"))
        if not _digits(first) or (dash and not _digits(last)):
            raise invalid_request(
                "'pages' must be 'all', a page, or ranges such as '1-5'.", param="pages", value=spec
            )
        low, high = int(first), int(last) if dash else int(first)
        if low < 1 or high < low:
            raise _pages_refused(f"'{part}' is not a valid page range.", spec)
        if total is not None and high > total:
            raise _pages_refused(
                f"'pages' asks for page {high} of a document with {total} page(s).", spec
            )
        if total is not None:  # the range is bounded by the document only once known
            chosen.extend(range(low, high + 1))
    return tuple(dict.fromkeys(chosen))


def _pages_refused(message: str, spec: str) -> ApiError:
    """Pages the document does not have, or a range ending before it starts: a refusal
    of what `pages` names (its syntax is the document's pattern)."""
    return ApiError(400, "invalid_pages", message, param="pages", value=spec)


def _digits(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also accepts '²' and other digits `int` refuses."""
    return text.isascii() and text.isdigit()
