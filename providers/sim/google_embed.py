"""The simulated Gemini embeddings: `POST /v1beta/models/{model}:embedContent` and
`:batchEmbedContents` (and under `/v1`), mounted with `providers.sim.google`'s routes.

A `ContentEmbedding` has 768 components (3072 for `gemini-embedding-*`), shortened by
`outputDimensionality`; the vector is `providers.sim.content`'s for the text, so it matches
the other simulated vendors' for the same words. Authentication, model ids and faults are
the chat routes' (`providers.sim.google`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.sim import content
from providers.sim.core import Route, SimContext, SimRequest, SimResponse
from providers.sim.faults import apply_fault
from providers.sim.google import (
    VENDOR,
    GoogleError,
    check_auth,
    check_model,
    fault_error,
    parse_body,
    turn_text,
)

MAX_BATCH_REQUESTS = 100
DEFAULT_EMBEDDING_SIZE = 768
LARGE_EMBEDDING_SIZE = 3072


def embedding_size(model: str) -> int:
    return LARGE_EMBEDDING_SIZE if model.startswith("gemini-embedding") else DEFAULT_EMBEDDING_SIZE


def embed_one(item: Mapping[str, Any], model: str) -> dict[str, Any]:
    """One `ContentEmbedding` for an `EmbedContentRequest`."""
    text = turn_text(item.get("content") or {})
    if not text:
        raise GoogleError(400, "* EmbedContentRequest.content: contents must not be empty")
    size = embedding_size(model)
    dimensions = item.get("outputDimensionality")
    if dimensions is not None and (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 0 < dimensions <= size
    ):
        raise GoogleError(400, f"* outputDimensionality must be between 1 and {size}.")
    return {"values": content.embedding(text, size, dimensions)}


async def embed_content(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1beta/models/{model}:embedContent`."""
    try:
        check_auth(request)
        model = check_model(request)
        body = parse_body(request)
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f, model))
        embedding = embed_one(body, model)
    except GoogleError as error:
        return error.response()
    return SimResponse.of_json({"embedding": embedding})


async def batch_embed_contents(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1beta/models/{model}:batchEmbedContents`."""
    try:
        check_auth(request)
        model = check_model(request)
        requests = parse_body(request).get("requests")
        if not isinstance(requests, list) or not 0 < len(requests) <= MAX_BATCH_REQUESTS:
            raise GoogleError(
                400, f"* BatchEmbedContentsRequest.requests: 1 to {MAX_BATCH_REQUESTS}"
            )
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f, model))
        embeddings = [embed_one(item if isinstance(item, dict) else {}, model) for item in requests]
    except GoogleError as error:
        return error.response()
    return SimResponse.of_json({"embeddings": embeddings})


ROUTES: list[Route] = [
    Route("POST", f"/{version}/models/{{model}}:{method}", handler)
    for version in ("v1beta", "v1")
    for method, handler in (
        ("embedContent", embed_content),
        ("batchEmbedContents", batch_embed_contents),
    )
]
