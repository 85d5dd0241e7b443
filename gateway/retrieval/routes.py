"""POST /v1/embeddings and POST /v1/rerank (rerank is guarded by the `embeddings`
permission; see `gateway.retrieval.rerank`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.platform.web import json_response, read_json
from gateway.retrieval.embeddings import encode_body, serve_embeddings
from gateway.retrieval.rerank import serve_rerank
from gateway.retrieval.services import RetrievalServices


def retrieval_blueprints(retrieval: RetrievalServices) -> tuple[Blueprint, ...]:
    """One blueprint per endpoint, named as the OpenAPI document's operations are."""
    embedding = Blueprint("embeddings", __name__)
    ranking = Blueprint("rerank", __name__)

    @embedding.post("/v1/embeddings")
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
    async def rerank() -> Response:
        principal = await retrieval.auth.caller()
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_rerank(retrieval, principal, body, headers)
        return json_response(answer.body, answer.status, answer.headers)

    return embedding, ranking
