"""Serving POST /v1/rerank: validate, resolve, call upstream, answer Cohere's shape.

Permission: `embeddings`. The spec names no `rerank` permission and rerank belongs to the
same retrieval family ("Text embeddings and reranking"), so a key that may embed may rerank.

Results are ordered by relevance, best first, and cut to `top_n` here whatever the vendor
did; cost is the vendor's billing unit (search units for Cohere) at list price, and the
footprint counts the tokens a cross-encoder reads (see `rerank_input.token_estimate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.platform.auth import Principal
from gateway.platform.jsonio import JsonAnswer
from gateway.retrieval.answer import answer_headers, service_object
from gateway.retrieval.rerank_input import (
    RerankParams,
    check_for_model,
    parse_rerank_body,
    token_estimate,
)
from gateway.retrieval.serve import Answered, serve_retrieval
from gateway.retrieval.services import RetrievalServices
from gateway.retrieval.shapes import RerankAnswer, RerankedDocument, RerankedItem
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.errors import UpstreamHTTPError
from providers.types import RerankHit, RerankRequest, RerankResult, Usage


async def serve_rerank(
    retrieval: RetrievalServices, principal: Principal, body: Any, headers: Mapping[str, str]
) -> JsonAnswer:
    """Answer one rerank request (raises `ApiError` for client mistakes and upstream
    failures). Cancellation closes the upstream call and propagates."""
    principal.require("embeddings")
    params, answered = await serve_retrieval(
        retrieval,
        principal,
        headers,
        body,
        endpoint="rerank",
        parse=parse_rerank_body,
        capability="rerank",
        check=check_for_model,
        tokens=token_estimate,
        operation=_rerank,
        usage_of=_usage,
    )
    return JsonAnswer(200, dict(rerank_body(answered, params)), answer_headers(answered))


async def _rerank(adapter: Provider, target: Target, params: RerankParams) -> RerankResult:
    request = RerankRequest(
        model=target.upstream_model,
        query=params.query,
        documents=[doc.text for doc in params.documents],
        top_n=params.top_n,
    )
    result = await adapter.rerank(request)
    count = len(params.documents)
    if any(not 0 <= hit.index < count for hit in result.hits):  # would point past the input
        raise UpstreamHTTPError(
            target.provider_id, "the upstream ranked a document that was not sent", status=502
        )
    return result


def _usage(params: RerankParams, result: RerankResult) -> Usage:
    """The vendor's search units (what it bills) and the tokens the model read (what the
    footprint counts)."""
    return Usage(token_estimate(params), searches=result.search_units)


# -- the answer ----------------------------------------------------------------------------


def rerank_body(answered: Answered[RerankResult], params: RerankParams) -> RerankAnswer:
    result = answered.served.value
    hits = ranked(result.hits, params.top_n)
    return {
        "id": answered.facts.request_id,
        "results": [_result(hit, params) for hit in hits],
        "meta": {"billed_units": {"search_units": result.search_units}},
        "service": service_object(answered),
    }


def ranked(hits: Sequence[RerankHit], top_n: int | None) -> list[RerankHit]:
    """Best first (ties by original position), at most `top_n`."""
    ordered = sorted(hits, key=lambda hit: (-hit.relevance_score, hit.index))
    return ordered if top_n is None else ordered[:top_n]


def _result(hit: RerankHit, params: RerankParams) -> RerankedItem:
    item: RerankedItem = {"index": hit.index, "relevance_score": hit.relevance_score}
    if params.return_documents:
        doc = params.documents[hit.index]
        document: RerankedDocument = {"text": doc.text}
        if doc.id is not None:
            document["id"] = doc.id
        item["document"] = document
    return item
