"""POST /v1/embeddings and POST /v1/rerank (rerank is guarded by the `embeddings`
permission; see `gateway.retrieval.rerank`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.platform.apidoc import Header, operation
from gateway.platform.web import json_response, read_json
from gateway.retrieval.embeddings import encode_body, serve_embeddings
from gateway.retrieval.rerank import serve_rerank
from gateway.retrieval.services import RetrievalServices
from gateway.retrieval.shapes import (
    EmbeddingsAnswer,
    EmbeddingsRequest,
    RerankAnswer,
    RerankRequest,
)
from gateway.upstream.refusals import ENGINE, merged

TAG = "retrieval"
# Past its body's shape, a retrieval call is refused for a fallback no provider could
# serve or a forced provider the workspace has not configured (`gateway.upstream.plan`).
PLAN = {400: ("invalid_fallback", "provider_not_configured")}
EMBEDDINGS_ERRORS = merged(ENGINE, PLAN, {400: ("invalid_input", "token_limit_exceeded")})
RERANK_ERRORS = merged(
    ENGINE,
    PLAN,
    {400: ("invalid_documents", "too_many_documents", "query_too_long", "invalid_top_n")},
)
SERVICE_HEADERS = (
    Header("X-Service-Project", "A project id for the usage records"),
    Header("X-Service-Team", "A team id for the usage records"),
    Header("X-Service-Tags", "Comma-separated tags for the usage records"),
    Header("X-Service-Trace-Id", "A trace id of the caller's"),
)


def retrieval_blueprints(retrieval: RetrievalServices) -> tuple[Blueprint, ...]:
    """One blueprint per endpoint, named as the OpenAPI document's operations are."""
    embedding = Blueprint("embeddings", __name__)
    ranking = Blueprint("rerank", __name__)

    @embedding.post("/v1/embeddings")
    @operation(
        "Embeddings for one text or many",
        TAG,
        body=EmbeddingsRequest,
        answer=EmbeddingsAnswer,
        headers=SERVICE_HEADERS,
        errors=EMBEDDINGS_ERRORS,
        description="One model per call (fallbacks only where `service.fallbacks` names "
        "them: vectors compare within one model). `dimensions` is for models trained to be "
        "shortened, up to their width.",
    )
    async def embeddings() -> Response:
        principal = await retrieval.auth.caller()
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_embeddings(retrieval, principal, body, headers)
        payload = await encode_body(answer.body)  # large answers are encoded off the loop
        return Response(
            payload, status=answer.status, headers=answer.headers, content_type="application/json"
        )

    @ranking.post("/v1/rerank")
    @operation(
        "Documents ordered by relevance to a query",
        TAG,
        body=RerankRequest,
        answer=RerankAnswer,
        headers=SERVICE_HEADERS,
        errors=RERANK_ERRORS,
        description="Needs the `embeddings` permission. Results are best first, cut to "
        "`top_n`; `meta.billed_units` is the vendor's billing.",
    )
    async def rerank() -> Response:
        principal = await retrieval.auth.caller()
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_rerank(retrieval, principal, body, headers)
        return json_response(answer.body, answer.status, answer.headers)

    return embedding, ranking
