"""POST /v1/ocr's form fields, validated into `OcrParams`: pure, no I/O.

Multipart fields are text: booleans are `true`/`false`; `language_hints` is a JSON array
of codes or a comma-separated list; `pages` is `all`, a page, a range (`1-5`) or a list of
them (`1,3,5-7`), checked against the document once its page count is known.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import orjson

from gateway.platform.errors import invalid_request

OUTPUT_FORMATS = ("json", "text", "markdown")
# Types and limits from the spec's size table (OCR rows).
MB = 1024 * 1024
OCR_KINDS = {"pdf": 50 * MB, "tiff": 50 * MB, "png": 20 * MB, "jpg": 20 * MB, "bmp": 20 * MB,
             "webp": 20 * MB}  # fmt: skip
DEFAULT_MODEL = "mistral-ocr-latest"
LOCAL_MODEL = "local"


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
    pages = fields.get("pages", "all").strip() or "all"
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
    if raw is None or not raw.strip():
        return ()
    if raw.lstrip().startswith("["):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise invalid_request(
                "'language_hints' must be an array of language codes.", param="language_hints"
            )
        codes = value
    else:
        codes = [part.strip() for part in raw.split(",")]
    for code in codes:
        if not (2 <= len(code) <= 8 and code.replace("-", "").isalpha()):
            raise invalid_request(
                f"'{code}' is not a language code.", param="language_hints", value=code
            )
    return tuple(codes)


def select_pages(spec: str, total: int | None) -> tuple[int, ...] | None:
    """The 1-based pages `spec` names (None for all); 400 for bad syntax, and with `total`
    for a page outside the document. Without `total` only the syntax is checked (the
    answer is empty): expanding `1-999999999999` before the page count is known would
    exhaust memory."""
    if spec == "all":
        return None
    chosen: list[int] = []
    for part in spec.split(","):
        first, dash, last = (side.strip() for side in part.partition("-"))
        if not _digits(first) or (dash and not _digits(last)):
            raise invalid_request(
                "'pages' must be 'all', a page, or ranges such as '1-5'.", param="pages", value=spec
            )
        low, high = int(first), int(last) if dash else int(first)
        if low < 1 or high < low:
            raise invalid_request(f"'{part}' is not a valid page range.", param="pages", value=spec)
        if total is not None and high > total:
            raise invalid_request(
                f"'pages' asks for page {high} of a document with {total} page(s).",
                param="pages",
                value=spec,
            )
        if total is not None:  # the range is bounded by the document only once known
            chosen.extend(range(low, high + 1))
    return tuple(dict.fromkeys(chosen))


def _digits(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also accepts '²' and other digits `int` refuses."""
    return text.isascii() and text.isdigit()
