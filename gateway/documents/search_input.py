"""Validation of POST /v1/data/search into an attrs type: pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.documents.access import CLASSIFICATIONS
from gateway.documents.input import metadata_object
from gateway.kernels.vectors.search_body import query_and_top_k
from gateway.platform.errors import invalid_request

DEFAULT_RERANK_MODEL = "rerank-v3.5"
_FIELDS = frozenset({"query", "top_k", "filters", "rerank"})
_FILTERS = frozenset({"classification", "document_ids", "metadata"})


@attrs.frozen(kw_only=True)
class SearchParams:
    query: str
    top_k: int = 5
    classifications: tuple[str, ...] | None = None
    document_ids: frozenset[str] | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    rerank_model: str | None = None


def search_body(body: Mapping[str, Any]) -> SearchParams:
    query, top_k = query_and_top_k(body, _FIELDS)
    filters = _filters(body.get("filters"))
    return SearchParams(
        query=query, top_k=top_k, rerank_model=_rerank(body.get("rerank")), **filters
    )


def _filters(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_request("'filters' must be an object.", param="filters")
    unknown = sorted(set(value) - _FILTERS)
    if unknown:
        raise invalid_request(f"Unknown filter '{unknown[0]}'.", param=f"filters.{unknown[0]}")
    found: dict[str, Any] = {}
    if value.get("classification") is not None:
        found["classifications"] = _classifications(value["classification"])
    if value.get("document_ids") is not None:
        ids = value["document_ids"]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise invalid_request(
                "'filters.document_ids' must be an array of ids.", param="filters.document_ids"
            )
        found["document_ids"] = frozenset(ids)
    if value.get("metadata") is not None:
        found["metadata"] = metadata_object(value["metadata"], "filters.metadata")
    return found


def _classifications(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or any(i not in CLASSIFICATIONS for i in items):
        raise invalid_request(
            f"'filters.classification' must be one or more of {', '.join(CLASSIFICATIONS)}.",
            param="filters.classification",
            value=value,
        )
    return tuple(items)


def _rerank(value: Any) -> str | None:
    """`false` (default), `true` (the default rerank model) or a rerank model's name."""
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_RERANK_MODEL
    if isinstance(value, str) and value.strip():
        return value
    raise invalid_request(
        "'rerank' must be true, false or a rerank model's name.", param="rerank", value=value
    )
