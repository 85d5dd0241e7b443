"""Serving POST /v1/embeddings: validate, resolve, call upstream, answer OpenAI's shape.

Vectors come back from every adapter as floats; the client's `encoding_format` is applied
here, once, so `base64` means the same bytes whichever vendor served the request
(little-endian float32, as OpenAI sends it and as its client decodes it).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from gateway.platform.auth import Principal
from gateway.platform.jsonio import JsonAnswer, dumps
from gateway.retrieval.answer import answer_headers, service_object
from gateway.retrieval.embedding_input import (
    EmbeddingParams,
    check_for_model,
    parse_embeddings_body,
    token_estimate,
)
from gateway.retrieval.serve import Answered, serve_retrieval
from gateway.retrieval.services import RetrievalServices
from gateway.retrieval.shapes import EmbeddingsAnswer
from gateway.upstream.resolve import Target
from providers.base import Provider
from providers.errors import UpstreamHTTPError
from providers.types import EmbeddingRequest, EmbeddingResult, Usage

# Above this many float components, encoding the answer takes long enough (orjson: about
# 50 ns a number, 0.15 s for 2,048 vectors of 1,536) to stall every other request on the
# event loop, so it moves to a worker thread.
OFFLOAD_NUMBERS = 200_000


async def serve_embeddings(
    retrieval: RetrievalServices, principal: Principal, body: Any, headers: Mapping[str, str]
) -> JsonAnswer:
    """Answer one embeddings request (raises `ApiError` for client mistakes and upstream
    failures). Cancellation closes the upstream call and propagates."""
    principal.require("embeddings")
    params, answered = await serve_retrieval(
        retrieval,
        principal,
        headers,
        body,
        endpoint="embeddings",
        parse=parse_embeddings_body,
        capability="embeddings",
        check=check_for_model,
        tokens=token_estimate,
        operation=_embed,
        usage_of=_usage,
    )
    return JsonAnswer(200, dict(embeddings_body(answered, params)), answer_headers(answered))


async def _embed(adapter: Provider, target: Target, params: EmbeddingParams) -> EmbeddingResult:
    request = EmbeddingRequest(
        model=target.upstream_model,
        inputs=params.inputs,
        dimensions=params.dimensions,
        user=params.user,
        token_inputs=params.token_inputs,
    )
    result = await adapter.embed(request)
    if len(result.vectors) != len(params.inputs):  # would misalign every index after it
        raise UpstreamHTTPError(
            target.provider_id,
            f"the upstream returned {len(result.vectors)} vectors for {len(params.inputs)} inputs",
            status=502,
        )
    return result


def _usage(params: EmbeddingParams, result: EmbeddingResult) -> Usage:
    """Tokens as the vendor billed them, else estimated."""
    return Usage(result.usage.prompt_tokens or token_estimate(params))


# -- the answer ----------------------------------------------------------------------------


def embeddings_body(
    answered: Answered[EmbeddingResult], params: EmbeddingParams
) -> EmbeddingsAnswer:
    tokens = answered.accounting.usage.prompt_tokens
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": encode(vector, params)}
            for index, vector in enumerate(answered.served.value.vectors)
        ],
        "model": answered.target.model_id,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        "service": service_object(answered),
    }


def encode(vector: Sequence[float], params: EmbeddingParams) -> list[float] | str:
    if params.encoding_format == "base64":
        return base64_vector(vector)
    return [float(x) for x in vector]


def base64_vector(vector: Sequence[float]) -> str:
    """Little-endian float32, base64: OpenAI's `encoding_format=base64`, byte for byte."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


async def encode_body(body: dict[str, Any]) -> bytes:
    """The answer as JSON bytes, encoded off the event loop when it is large (float vectors;
    base64 strings encode fast). On cancellation the encoding finishes, then is dropped."""
    numbers = sum(
        len(item["embedding"]) for item in body["data"] if isinstance(item["embedding"], list)
    )
    if numbers < OFFLOAD_NUMBERS:
        return dumps(body)
    return await trio.to_thread.run_sync(lambda: dumps(body))
