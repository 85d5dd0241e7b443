"""Adapter for Cohere's API v2: rerank (`/v2/rerank`) and embeddings (`/v2/embed`).

Cohere has its own shapes rather than OpenAI's: rerank answers with `results` of
`{index, relevance_score}` and bills in `meta.billed_units.search_units`; embed takes
`texts` with an `input_type` and answers `embeddings.float`, billing
`meta.billed_units.input_tokens`. Errors are a bare `{"message": ...}` whose HTTP status
carries the meaning (the official SDK has one exception class per status).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from providers.errors import (
    AuthenticationFailed,
    InvalidUpstreamRequest,
    ModelNotFound,
    ModelOverloaded,
    ProviderError,
    UpstreamHTTPError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from providers.http import HttpProvider, read_json, retry_after_seconds
from providers.types import (
    JSON,
    EmbeddingRequest,
    EmbeddingResult,
    RerankHit,
    RerankRequest,
    RerankResult,
    Usage,
)

DEFAULT_INPUT_TYPE = "search_document"
INPUT_TYPES = frozenset({"search_document", "search_query", "classification", "clustering"})
MAX_TEXTS_PER_CALL = 96
_AUTH_STATUSES = (401, 403, 498)


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


def batches(texts: Sequence[str], size: int = MAX_TEXTS_PER_CALL) -> list[Sequence[str]]:
    """`texts` in runs of at most `size`: Cohere takes 96 texts a call, the gateway 2048."""
    return [texts[start : start + size] for start in range(0, len(texts), size)]


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


def merge_embeddings(model: str, parts: Sequence[tuple[list[list[float]], int]]) -> EmbeddingResult:
    """The answers of several batches as one result, vectors in input order."""
    vectors = [vector for part_vectors, _ in parts for vector in part_vectors]
    tokens = sum(part_tokens for _, part_tokens in parts)
    return EmbeddingResult(model=model, vectors=vectors, usage=Usage(prompt_tokens=tokens))


def parse_model_names(data: Mapping[str, Any]) -> list[str]:
    return [str(item["name"]) for item in data.get("models") or () if item.get("name")]


# -- errors --------------------------------------------------------------------------------


def error_message(status: int, body: bytes) -> str:
    parsed = read_json(body)
    if isinstance(parsed, dict) and parsed.get("message"):
        return str(parsed["message"])
    return f"upstream answered HTTP {status}"


def map_cohere_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str], model: str
) -> ProviderError:
    """A Cohere error answer mapped by its status (498 is Cohere's invalid-token status)."""
    message = error_message(status, body)
    if status in _AUTH_STATUSES:
        return AuthenticationFailed(provider, message)
    if status == 404:
        return ModelNotFound(provider, message, model=model)
    if status == 429:
        return ModelOverloaded(
            provider, message, model=model, retry_after=retry_after_seconds(headers)
        )
    if status in (400, 422):
        return InvalidUpstreamRequest(provider, message)
    if status == 503:
        return UpstreamUnavailable(provider, message, retry_after=retry_after_seconds(headers))
    if status == 504:
        return UpstreamTimeout(provider, message, timeout_ms=0)
    return UpstreamHTTPError(provider, message, status=status)


# -- the adapter ---------------------------------------------------------------------------


class CohereProvider(HttpProvider):
    """Rerank, embeddings and model listing on Cohere.

    `endpoint.base_url` is the vendor root (`https://api.cohere.com`). Settings:
    `input_type` (embeddings; default `search_document`), `max_tokens_per_doc` (rerank).
    """

    def map_error(
        self, status: int, body: bytes, headers: Mapping[str, str], model: str
    ) -> ProviderError:
        return map_cohere_error(self.provider_id, status, body, headers, model)

    async def rerank(self, request: RerankRequest) -> RerankResult:
        """One rerank call; cancelling it closes the upstream request."""
        limit = self.endpoint.settings.get("max_tokens_per_doc")
        payload = rerank_payload(request, max_tokens_per_doc=limit)
        data = await self.post_json("/v2/rerank", payload, model=request.model)
        return parse_rerank(data, request.model)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embeds in batches of 96, one after the other (a failed batch fails the call);
        cancelling it closes the batch in flight."""
        input_type = self._input_type()
        parts = []
        for texts in batches(request.inputs):
            payload = embed_payload(request, texts, input_type)
            parts.append(
                parse_embed(await self.post_json("/v2/embed", payload, model=request.model))
            )
        return merge_embeddings(request.model, parts)

    def _input_type(self) -> str:
        value = self.endpoint.settings.get("input_type", DEFAULT_INPUT_TYPE)
        return value if value in INPUT_TYPES else DEFAULT_INPUT_TYPE

    async def list_models(self) -> list[str]:
        return parse_model_names(await self.get_json("/v1/models"))
