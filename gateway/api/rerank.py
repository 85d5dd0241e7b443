"""POST /v1/rerank (guarded by the `embeddings` permission; see `gateway.retrieval.rerank`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from quart import Blueprint, Response, request

from gateway.platform.state import AppState
from gateway.platform.web import json_response, read_json
from gateway.retrieval.rerank import serve_rerank


def rerank_blueprint(state: AppState) -> Blueprint:
    bp = Blueprint("rerank", __name__)

    @bp.post("/v1/rerank")
    async def rerank() -> Response:
        principal = await state.auth.caller()
        body = await read_json()
        headers = cast(Mapping[str, str], request.headers)  # case-insensitive lookups
        answer = await serve_rerank(state, principal, body, headers)
        return json_response(answer.body, answer.status, answer.headers)

    return bp
