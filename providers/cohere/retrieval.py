"""Cohere's retrieval translations (pure): rerank (`/v2/rerank`) and embed (`/v2/embed`).

Cohere has its own shapes rather than OpenAI's: rerank answers with `results` of
`{index, relevance_score}` and bills in `meta.billed_units.search_units`; embed takes
`texts` with an `input_type` and answers `embeddings.float`, billing
`meta.billed_units.input_tokens`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from providers.types import (
    JSON,
    EmbeddingRequest,
    RerankHit,
    RerankRequest,
    RerankResult,
)

DEFAULT_INPUT_TYPE = "search_document"
INPUT_TYPES = frozenset({"search_document", "search_query", "classification", "clustering"})
MAX_TEXTS_PER_CALL = 96


# -- request out ---------------------------------------------------------------------------


def rerank_payload(request: RerankRequest, *, max_tokens_per_doc: int | None = None) -> JSON:
    payload: JSON = {
        "model": request.model,
        "query": request.query,
        "documents": list(request.documents),
    }
    if request.top_n is not None:
        payload["top_n"] = request.top_n
    if max_tokens_per_doc is not None:
        payload["max_tokens_per_doc"] = max_tokens_per_doc
    return payload


def embed_payload(
    request: EmbeddingRequest, texts: Sequence[str], input_type: str = DEFAULT_INPUT_TYPE
) -> JSON:
    """The body of `/v2/embed` for `texts` (one batch of `request.inputs`).

    Cohere's v3+ models require `input_type`; the gateway's embeddings API has no such
    field, and its own callers (file processing, document ingestion) embed documents to
    be searched, hence the default `search_document`. A provider setting overrides it.
    """
    payload: JSON = {
        "model": request.model,
        "texts": list(texts),
        "input_type": input_type,
        "embedding_types": ["float"],
    }
    if request.dimensions is not None:
        payload["output_dimension"] = request.dimensions
    return payload


# -- answers in ----------------------------------------------------------------------------


def _billed(data: Mapping[str, Any], unit: str) -> float | None:
    meta = data.get("meta") or {}
    billed = meta.get("billed_units") or {}
    value = billed.get(unit)
    return float(value) if value is not None else None


def parse_rerank(data: Mapping[str, Any], model: str) -> RerankResult:
    """Hits best first (Cohere already sorts them; we do not rely on it)."""
    hits = sorted(
        (
            RerankHit(index=int(item["index"]), relevance_score=float(item["relevance_score"]))
            for item in data.get("results") or ()
        ),
        key=lambda hit: (-hit.relevance_score, hit.index),
    )
    units = _billed(data, "search_units")
    return RerankResult(
        model=model, hits=hits, search_units=math.ceil(units) if units is not None else 1
    )


def parse_embed(data: Mapping[str, Any]) -> tuple[list[list[float]], int]:
    """The float vectors of one `/v2/embed` answer and the input tokens billed for it."""
    embeddings = data.get("embeddings") or {}
    vectors = [[float(x) for x in vector] for vector in embeddings.get("float") or ()]
    tokens = _billed(data, "input_tokens")
    return vectors, int(tokens or 0)


def parse_model_names(data: Mapping[str, Any]) -> list[str]:
    return [str(item["name"]) for item in data.get("models") or () if item.get("name")]
