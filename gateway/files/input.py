"""Validation of the files endpoints' inputs into attrs types: pure, no I/O.

Multipart fields are text, so the `service` options arrive in one of three spellings, all
accepted: a `service` field holding a JSON object, bracketed fields such as
`service[process]=true` (what the official `openai` client sends for `extra_body`), or the
bare option name (`process=true`). Booleans are `true`/`false` (also `1`/`0`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs
import orjson

from gateway.kernels.uploads.formats import KINDS, PURPOSE_LIMITS, Kind
from gateway.platform.errors import ApiError, invalid_request
from gateway.platform.shapes import (
    NON_BLANK,
    NOT_NULL,
    Choices,
    Doc,
    Format,
    Length,
    Range,
    parse,
    parse_query,
)
from providers.catalog import Catalog
from store.files import STATUSES, ListQuery

CLASSIFICATIONS = ("public", "internal", "confidential", "restricted", "phi")
_BOOL_OPTIONS = ("process", "vectorize", "detect_pii", "auto_transcribe", "speaker_diarization")
_TEXT_OPTIONS = ("ocr_model", "embedding_model", "collection", "language", "compliance_regime")
_INT_OPTIONS = ("chunk_size", "chunk_overlap")
OPTION_NAMES = (*_BOOL_OPTIONS, *_TEXT_OPTIONS, *_INT_OPTIONS, "classification")
DEFAULT_CHUNK_SIZE = 512
DEFAULT_CHUNK_OVERLAP = 64
MAX_CHUNK_SIZE = 8192
PURPOSES = tuple(PURPOSE_LIMITS)

# A metadata value: what a `metadata.<key>=` filter can match.
MetadataValue = str | int | float | bool | None
Metadata = Mapping[str, MetadataValue]
Limit = Annotated[int, Range(least=1, most=100)]


@attrs.frozen(kw_only=True)
class FilesQuery:
    """GET /v1/files: filters and the page; `metadata.<key>=<value>` parameters (not
    declared here) filter on metadata too."""

    purpose: Annotated[str, Choices(PURPOSES)] | None = None
    status: Annotated[str, Choices(STATUSES)] | None = None
    limit: Limit = 20
    after: Annotated[str, Doc("A file id: the page after it")] | None = None
    order: Literal["asc", "desc"] = "desc"
    include: Annotated[Literal["processing"], Doc("Adds the processing results")] | None = None
    collection: str | None = None


@attrs.frozen(kw_only=True)
class ChunksQuery:
    """GET /v1/files/{file_id}/chunks: one page of the chunks."""

    limit: Limit = 20
    offset: Annotated[int, Range(least=0)] = 0


@attrs.frozen
class MetadataChange:
    """PATCH /v1/files/{file_id}: the new metadata, replacing the old."""

    metadata: Metadata


# Multipart fields are text: a flag is one of these (any case), a number its digits.
# Options left out are None; none takes null (`NOT_NULL`).
Flag = Annotated[str, Choices(("true", "false", "1", "0"))]
Text = Annotated[str, NON_BLANK]
OptionalFlag = Annotated[Flag | None, NOT_NULL]
OptionalText = Annotated[Text | None, NOT_NULL]
OptionalModel = Annotated[Text | None, NOT_NULL, Doc("A model of the catalog for the work")]
ChunkSize = Annotated[int | None, Range(least=16, most=MAX_CHUNK_SIZE), NOT_NULL]
ChunkOverlap = Annotated[int | None, Range(least=0, most=MAX_CHUNK_SIZE - 1), NOT_NULL]
Classification = Annotated[str | None, Choices(CLASSIFICATIONS), NOT_NULL]


@attrs.frozen(kw_only=True)
class ServiceFields:
    """The processing options: any of `process`, `vectorize`, `detect_pii`,
    `auto_transcribe` or `ocr_model` (`local` runs OCR in-process) queues the file. A
    model must be one the catalog has for the work (`invalid_model`), the overlap smaller
    than the chunk (`invalid_chunking`)."""

    process: Annotated[bool | Flag | None, NOT_NULL] = None
    ocr_model: OptionalModel = None
    vectorize: Annotated[bool | Flag | None, NOT_NULL] = None
    embedding_model: OptionalModel = None
    chunk_size: ChunkSize = None
    chunk_overlap: ChunkOverlap = None
    detect_pii: Annotated[bool | Flag | None, NOT_NULL] = None
    collection: OptionalText = None
    auto_transcribe: Annotated[bool | Flag | None, NOT_NULL] = None
    language: OptionalText = None
    speaker_diarization: Annotated[bool | Flag | None, NOT_NULL] = None
    classification: Classification = None
    compliance_regime: OptionalText = None


@attrs.frozen(kw_only=True)
class UploadParts:
    """The parts of a file upload (multipart/form-data). The processing options go in
    `service` (the JSON text of an object), as `service[<option>]` parts, or as parts of
    their own."""

    file: Annotated[str, Format("binary"), Length(least=1), Doc("The file's bytes (not empty)")]
    purpose: Annotated[str, Choices(PURPOSES)]
    metadata: Annotated[Metadata | None, NOT_NULL, Doc("Sent as the JSON text of the object")] = (
        None
    )
    service: Annotated[
        ServiceFields | None, NOT_NULL, Doc("Sent as the JSON text of the object")
    ] = None
    process: OptionalFlag = None
    ocr_model: OptionalModel = None
    vectorize: OptionalFlag = None
    embedding_model: OptionalModel = None
    chunk_size: ChunkSize = None
    chunk_overlap: ChunkOverlap = None
    detect_pii: OptionalFlag = None
    collection: OptionalText = None
    auto_transcribe: OptionalFlag = None
    language: OptionalText = None
    speaker_diarization: OptionalFlag = None
    classification: Classification = None
    compliance_regime: OptionalText = None


@attrs.frozen(kw_only=True)
class ServiceOptions:
    process: bool = False
    ocr_model: str | None = None
    vectorize: bool = False
    embedding_model: str | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    detect_pii: bool = False
    collection: str | None = None
    auto_transcribe: bool = False
    language: str | None = None
    speaker_diarization: bool = False
    classification: str | None = None
    compliance_regime: str | None = None

    @property
    def wants_processing(self) -> bool:
        """Any derived output asked for (an OCR model too) means the file goes through the
        pipeline."""
        return (
            self.process
            or self.vectorize
            or self.detect_pii
            or self.auto_transcribe
            or self.ocr_model is not None
        )


@attrs.frozen(kw_only=True)
class UploadForm:
    purpose: str
    metadata: Mapping[str, Any]
    service: ServiceOptions


def upload_form(fields: Mapping[str, str]) -> UploadForm:
    """The non-file fields of an upload, validated; 400 naming the first bad one."""
    purpose = fields.get("purpose")
    if purpose is None:
        raise invalid_request("'purpose' is required.", param="purpose")
    if purpose not in PURPOSE_LIMITS:
        raise invalid_request(
            f"'purpose' must be one of {', '.join(PURPOSE_LIMITS)}.", param="purpose", value=purpose
        )
    return UploadForm(
        purpose=purpose, metadata=metadata_field(fields.get("metadata")), service=service(fields)
    )


def metadata_field(raw: str | None) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise invalid_request(
            "'metadata' must be a JSON object serialized as a string.", param="metadata"
        ) from None
    return metadata_object(value)


def metadata_object(value: Any) -> dict[str, Any]:
    """Metadata is a flat object of strings, numbers and booleans (what a filter can match)."""
    if not isinstance(value, dict):
        raise invalid_request("'metadata' must be a JSON object.", param="metadata")
    for key, item in value.items():
        if item is not None and not isinstance(item, str | int | float | bool):
            raise invalid_request(
                f"'metadata.{key}' must be a string, number or boolean.", param="metadata"
            )
    return value


def service(fields: Mapping[str, str]) -> ServiceOptions:
    raw = _service_values(fields)
    unknown = set(raw) - set(OPTION_NAMES)
    if unknown:
        name = sorted(unknown)[0]
        raise invalid_request(f"Unknown service option '{name}'.", param=f"service.{name}")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        values[name] = _option(name, value)
    size = values.get("chunk_size", DEFAULT_CHUNK_SIZE)
    overlap = values.get("chunk_overlap", min(DEFAULT_CHUNK_OVERLAP, size // 4))
    values["chunk_overlap"] = overlap
    if overlap >= size:
        raise ApiError(
            400,
            "invalid_chunking",
            "'service.chunk_overlap' must be smaller than 'service.chunk_size'.",
            param="service.chunk_overlap",
            value=overlap,
        )
    return ServiceOptions(**values)


PURPOSE_FAMILIES = {"audio": "audio", "vision": "image"}
"""Purposes that take one family of files (the size table's kinds)."""


def check_kind(purpose: str, kind: Kind) -> None:
    """Purpose `audio` takes audio and `vision` images (the size table's types): a PDF
    under either is the spec's "400 invalid type or purpose", not a file stored under a
    wrong name."""
    family = PURPOSE_FAMILIES.get(purpose)
    if family is not None and kind.family != family:
        accepted = ", ".join(k.name for k in KINDS.values() if k.family == family)
        raise ApiError(
            400,
            "invalid_file_type",
            f"Purpose '{purpose}' takes {family} files ({accepted}); this file is {kind.name}.",
            param="purpose",
            value=purpose,
        )


def check_models(catalog: Catalog, options: ServiceOptions) -> None:
    """A named `embedding_model` or `ocr_model` must be one the catalog knows for that work:
    a 400 at upload, rather than a file accepted only to end in `error` once processed."""
    wanted = (("embedding_model", "embeddings"), ("ocr_model", "ocr"))
    for name, capability in wanted:
        model = getattr(options, name)
        if model is None or (name == "ocr_model" and model == "local"):
            continue
        info = catalog.model(model)
        if info is None or not info.has(capability):
            known = [m.id for m in catalog.models(capability=capability)]
            if name == "ocr_model":
                known.append("local")
            raise ApiError(
                422,
                "invalid_model",
                f"'service.{name}' must be a model for {capability}: {', '.join(known)}.",
                param=f"service.{name}",
                model=model,
            )


def _service_values(fields: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if "service" in fields:
        try:
            parsed = orjson.loads(fields["service"])
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            raise invalid_request("'service' must be a JSON object.", param="service")
        values.update(parsed)
    for name, value in fields.items():
        if name.startswith("service[") and name.endswith("]"):
            values[name[8:-1]] = value
        elif name in OPTION_NAMES:
            values[name] = value
    return values


def _option(name: str, value: Any) -> Any:
    param = f"service.{name}"
    if name in _BOOL_OPTIONS:
        return _boolean(value, param)
    if name in _INT_OPTIONS:
        return _chunk_int(value, param)
    if not isinstance(value, str) or not value.strip():
        raise invalid_request(f"'{param}' must be a non-empty string.", param=param, value=value)
    if name == "classification" and value not in CLASSIFICATIONS:
        raise invalid_request(
            f"'{param}' must be one of {', '.join(CLASSIFICATIONS)}.", param=param, value=value
        )
    return value


def _boolean(value: Any, param: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
        return value.lower() in ("true", "1")
    raise invalid_request(f"'{param}' must be true or false.", param=param, value=value)


def _chunk_int(value: Any, param: str) -> int:
    number: Any = value
    if isinstance(value, str):
        number = int(value) if _digits(value.strip()) else None
    if isinstance(number, bool) or not isinstance(number, int):
        raise invalid_request(f"'{param}' must be an integer.", param=param, value=value)
    low = 0 if param.endswith("overlap") else 16
    if not low <= number <= MAX_CHUNK_SIZE:
        raise invalid_request(
            f"'{param}' must be between {low} and {MAX_CHUNK_SIZE}.", param=param, value=value
        )
    return number


def list_query(workspace_id: str, args: Mapping[str, str]) -> ListQuery:
    """GET /v1/files query parameters (`FilesQuery`, plus `metadata.<key>` filters); 400
    for anything out of range."""
    asked = parse_query(FilesQuery, args)
    return ListQuery(
        workspace_id=workspace_id,
        limit=asked.limit,
        order=asked.order,
        after=asked.after or None,
        purpose=asked.purpose,
        status=asked.status,
        collection=asked.collection or None,
        metadata={k[9:]: v for k, v in args.items() if k.startswith("metadata.") and len(k) > 9},
    )


def page_window(args: Mapping[str, str]) -> tuple[int, int]:
    """`limit` (1-100, default 20) and `offset` (0 or more) of the chunks endpoint."""
    asked = parse_query(ChunksQuery, args)
    return asked.limit, asked.offset


def _digits(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also accepts '²' and other digits `int` refuses."""
    return text.isascii() and text.isdigit()


def patch_body(body: Mapping[str, Any]) -> dict[str, Any]:
    return dict(parse(MetadataChange, body).metadata)
