"""`POST /v1/embeddings` of the simulated OpenAI API."""

from __future__ import annotations

import base64
import sys
from array import array
from typing import Any

from providers.sim import content
from providers.sim.core import SimContext, SimRequest, SimResponse
from providers.sim.faults import apply_fault
from providers.sim.openai.common import (
    DEFAULT_EMBEDDING_SIZE,
    EMBEDDING_SIZES,
    MAX_EMBEDDING_INPUTS,
    VENDOR,
    OpenAIError,
    _headers,
    check_auth,
    check_model,
    fault_error,
    parse_body,
)


def embedding_inputs(value: Any) -> list[tuple[str, int]]:
    """(text to embed, its token count) per input: a string, strings, or token arrays."""
    single_tokens = isinstance(value, list) and value and all(isinstance(v, int) for v in value)
    if isinstance(value, str) or single_tokens:
        value = [value]
    if not isinstance(value, list) or not value or len(value) > MAX_EMBEDDING_INPUTS:
        raise OpenAIError(400, "'$.input' is invalid.", param="input")
    inputs: list[tuple[str, int]] = []
    for item in value:
        if isinstance(item, str) and item:
            inputs.append((item, content.count_tokens(item)))
        elif isinstance(item, list) and item and all(isinstance(t, int) for t in item):
            inputs.append((" ".join(map(str, item)), len(item)))
        else:
            raise OpenAIError(400, "'$.input' is invalid.", param="input")
    return inputs


def embedding_size(model: str, dimensions: Any) -> tuple[int, int | None]:
    """The model's vector size and the requested shortening (checked), if any."""
    size = EMBEDDING_SIZES.get(model, DEFAULT_EMBEDDING_SIZE)
    if dimensions is None:
        return size, None
    if not model.startswith("text-embedding-3"):
        raise OpenAIError(
            400, "This model does not support specifying dimensions.", param="dimensions"
        )
    if (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 0 < dimensions <= size
    ):
        raise OpenAIError(400, f"'dimensions' must be between 1 and {size}.", param="dimensions")
    return size, dimensions


def encode_vector(vector: list[float], encoding_format: str) -> list[float] | str:
    """Floats as JSON numbers, or base64 of little-endian float32 as OpenAI sends them."""
    if encoding_format == "float":
        return vector
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()


async def embeddings(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1/embeddings`: one deterministic unit vector per input."""
    try:
        check_auth(request)
        body = parse_body(request)
        model = check_model(body)
        inputs = embedding_inputs(body.get("input"))
        size, dimensions = embedding_size(model, body.get("dimensions"))
        encoding_format = body.get("encoding_format") or "float"
        if encoding_format not in ("float", "base64"):
            raise OpenAIError(400, "'encoding_format' must be float or base64.")
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f, model))
    except OpenAIError as error:
        return error.response()
    data = [
        {
            "object": "embedding",
            "index": index,
            "embedding": encode_vector(content.embedding(text, size, dimensions), encoding_format),
        }
        for index, (text, _) in enumerate(inputs)
    ]
    tokens = sum(count for _, count in inputs)
    payload = {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return SimResponse.of_json(payload, headers=_headers())
