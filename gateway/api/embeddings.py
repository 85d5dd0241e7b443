"""POST /v1/embeddings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.platform.state import AppState
from gateway.platform.web import read_json
from gateway.retrieval.embeddings import encode_body, serve_embeddings


def embeddings_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("embeddings", __name__)

    @bp.post("/v1/embeddings")
    async def embeddings() -> Response:
        principal = await state.auth.caller()
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_embeddings(state, principal, body, headers)
        payload = await encode_body(answer.body)  # large answers are encoded off the loop
        return Response(
            payload, status=answer.status, headers=answer.headers, content_type="application/json"
        )

    return bp
