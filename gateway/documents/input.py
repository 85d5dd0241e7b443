"""Validation of the data-document endpoints' inputs into attrs types: pure, no I/O.

Multipart fields arrive as text; numbers must be plain ASCII digits. Every problem is a 400
naming the parameter (the spec's Data documents row: 400 invalid type or parameters).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import attrs
import orjson

from gateway.documents.access import CLASSIFICATIONS
from gateway.kernels.text.chunking import STRATEGIES
from gateway.kernels.uploads.formats import MB
from gateway.platform.errors import invalid_request
from gateway.platform.shapes import (
    NOT_NULL,
    SPACE,
    Choices,
    Doc,
    Format,
    Length,
    Pattern,
    Range,
    parse_query,
)
from store.documents import STATUSES

# The spec's size table for data documents (kind as the upload sniffer names it).
KIND_LIMITS: Mapping[str, int] = {
    "pdf": 50 * MB,
    "docx": 25 * MB,
    "doc": 25 * MB,
    "txt": 10 * MB,
    "md": 10 * MB,
    "html": 10 * MB,
}
FIELDS = (
    "name",
    "data_classification",
    "chunking_strategy",
    "chunk_size_tokens",
    "chunk_overlap_tokens",
    "residency_region",
    "retention_days",
    "metadata",
)
MAX_RETENTION_DAYS = 36_500
MAX_NAME = 255
MAX_PAGE = 1_000_000
MAX_OFFSET = 2**31
# A metadata value: what a search filter can match.
MetadataValue = str | int | float | bool | None
Metadata = Mapping[str, MetadataValue]
Classification = Annotated[str, Choices(CLASSIFICATIONS)]
REGION = Pattern("^[a-z0-9-]{1,32}$", "a region name such as 'eu' or 'us'")


@attrs.frozen(kw_only=True)
class DocumentParts:
    """The parts of a data-document upload (multipart/form-data); numbers are ASCII
    digits."""

    file: Annotated[str, Format("binary"), Length(least=1), Doc("pdf, docx, doc, txt, md or html")]
    name: Annotated[
        str | None,
        Pattern(f"^$|[^{SPACE}]", "a name that is not blank"),
        Length(most=MAX_NAME),
        NOT_NULL,
        Doc("Default: the file's name"),
    ] = None
    data_classification: Annotated[Classification | None, NOT_NULL] = None
    chunking_strategy: Annotated[str | None, Choices(STRATEGIES), NOT_NULL] = None
    chunk_size_tokens: Annotated[
        int | None, Range(least=100, most=2000), NOT_NULL, Doc("Default 512")
    ] = None
    chunk_overlap_tokens: Annotated[
        int | None, Range(least=0, most=200), NOT_NULL, Doc("Default 50")
    ] = None
    residency_region: Annotated[str | None, REGION, NOT_NULL, Doc("Default eu")] = None
    retention_days: Annotated[
        int | None,
        Range(least=1, most=MAX_RETENTION_DAYS),
        NOT_NULL,
        Doc("Days until the document is erased; absent keeps it"),
    ] = None
    metadata: Annotated[
        Metadata | None, NOT_NULL, Doc("A flat JSON object, sent as its JSON text")
    ] = None


@attrs.frozen(kw_only=True)
class DocumentForm:
    name: str | None
    data_classification: str = "internal"
    chunking_strategy: str = "semantic"
    chunk_size_tokens: int = 512
    chunk_overlap_tokens: int = 50
    residency_region: str = "eu"
    retention_days: int | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


def upload_form(fields: Mapping[str, str]) -> DocumentForm:
    """The non-file fields of an upload, validated; 400 naming the first bad one."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise invalid_request(f"Unknown field '{unknown[0]}'.", param=unknown[0])
    size = _int(fields, "chunk_size_tokens", 512, 100, 2000)
    overlap = _int(fields, "chunk_overlap_tokens", 50, 0, 200)
    if overlap >= size:  # unreachable with today's bounds, kept for the rule's sake
        raise invalid_request("'chunk_overlap_tokens' must be smaller than 'chunk_size_tokens'.")
    retention = fields.get("retention_days")
    return DocumentForm(
        name=_name(fields.get("name")),
        data_classification=_choice(fields, "data_classification", "internal", CLASSIFICATIONS),
        chunking_strategy=_choice(fields, "chunking_strategy", "semantic", STRATEGIES),
        chunk_size_tokens=size,
        chunk_overlap_tokens=overlap,
        residency_region=_region(fields.get("residency_region", "eu")),
        retention_days=(
            None
            if retention in (None, "", "null")
            else _int(fields, "retention_days", 0, 1, MAX_RETENTION_DAYS)
        ),
        metadata=_metadata(fields.get("metadata")),
    )


def _name(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not value.strip() or len(value) > MAX_NAME:
        raise invalid_request(
            f"'name' must be 1 to {MAX_NAME} characters.", param="name", value=value
        )
    return value.strip()


def _choice(fields: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = fields.get(name, default)
    if value not in allowed:
        raise invalid_request(
            f"'{name}' must be one of {', '.join(allowed)}.", param=name, value=value
        )
    return value


def _region(value: str) -> str:
    """A region name: lowercase letters, digits and dashes (e.g. `eu`, `us`, `eu-de`)."""
    ok = 0 < len(value) <= 32 and all(c.islower() or c.isdigit() or c == "-" for c in value)
    if not ok or not value.isascii():
        raise invalid_request(
            "'residency_region' must be a region name such as 'eu' or 'us'.",
            param="residency_region",
            value=value,
        )
    return value


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _int(fields: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = fields.get(name)
    if raw is None:
        return default
    if not _digits(raw.strip()) or not low <= int(raw) <= high:
        raise invalid_request(
            f"'{name}' must be an integer from {low} to {high}.", param=name, value=raw
        )
    return int(raw)


def _metadata(raw: str | None) -> dict[str, Any]:
    """A JSON object serialized as a string, flat: strings, numbers, booleans (what search
    filters can match)."""
    if raw is None or raw == "":
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    return metadata_object(value, "metadata")


def metadata_object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_request(f"'{param}' must be a JSON object.", param=param)
    for key, item in value.items():
        if item is not None and not isinstance(item, str | int | float | bool):
            raise invalid_request(
                f"'{param}.{key}' must be a string, number or boolean.", param=param
            )
    return value


@attrs.frozen(kw_only=True)
class DocumentsQuery:
    """GET /v1/data/documents: filters and the page."""

    page: Annotated[int, Range(least=1, most=MAX_PAGE)] = 1
    page_size: Annotated[int, Range(least=1, most=100)] = 20
    status: Annotated[str, Choices(STATUSES)] | None = None
    classification: Classification | None = None


@attrs.frozen(kw_only=True)
class ChunksQuery:
    """GET /v1/data/documents/{document_id}/chunks: a window of the chunks."""

    limit: Annotated[int, Range(least=1, most=500)] = 50
    offset: Annotated[int, Range(least=0, most=MAX_OFFSET)] = 0


def list_args(args: Mapping[str, str]) -> DocumentsQuery:
    """GET /v1/data/documents query parameters."""
    return parse_query(DocumentsQuery, args)


def chunk_window(args: Mapping[str, str]) -> tuple[int, int]:
    """`limit` (1-500, default 50) and `offset` (0 or more, default 0) of /chunks."""
    window = parse_query(ChunksQuery, args)
    return window.limit, window.offset
