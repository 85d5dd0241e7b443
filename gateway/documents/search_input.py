"""Validation of POST /v1/data/search into an attrs type: pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from gateway.documents.input import Classification, Metadata
from gateway.kernels.vectors.search_body import Query, TopK
from gateway.platform.shapes import NON_BLANK, Count, Doc, parse

DEFAULT_RERANK_MODEL = "rerank-v3.5"


@attrs.frozen(kw_only=True)
class SearchFilters:
    """What narrows the documents searched; each left out (or null) narrows nothing."""

    classification: (
        Classification | Annotated[tuple[Classification, ...], Count(least=1)] | None
    ) = None
    document_ids: tuple[str, ...] | None = None
    metadata: Annotated[Metadata | None, Doc("Values the documents' metadata must equal")] = None


@attrs.frozen(kw_only=True)
class DocumentSearch:
    """A hybrid search of the workspace's data documents."""

    query: Query
    top_k: TopK = 5
    filters: SearchFilters | None = None
    rerank: Annotated[
        bool | Annotated[str, NON_BLANK] | None,
        Doc(f"Reorder the best candidates: true ({DEFAULT_RERANK_MODEL}) or a rerank model"),
    ] = None


@attrs.frozen(kw_only=True)
class SearchParams:
    query: str
    top_k: int = 5
    classifications: tuple[str, ...] | None = None
    document_ids: frozenset[str] | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    rerank_model: str | None = None


def search_body(body: Mapping[str, Any]) -> SearchParams:
    asked = parse(DocumentSearch, body)
    filters = asked.filters or SearchFilters()
    chosen = filters.classification
    return SearchParams(
        query=asked.query,
        top_k=asked.top_k,
        classifications=(chosen,) if isinstance(chosen, str) else chosen,
        document_ids=None if filters.document_ids is None else frozenset(filters.document_ids),
        metadata=filters.metadata or {},
        rerank_model=_rerank(asked.rerank),
    )


def _rerank(value: bool | str | None) -> str | None:
    """`false` (default), `true` (the default rerank model) or a rerank model's name."""
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_RERANK_MODEL
    return value
