"""Reading and checking an embeddings request: pure, so that every rule is a table test.

Two stages. `parse_embeddings_body` checks what needs no model (shapes, the 2048-item batch
bound, encodings). `check_for_model` checks what depends on the model the request resolved
to: whether it may shorten its vectors (`dimensions`) and each input against its maximum
input tokens (estimated at about four characters a token, as for chat).
"""

from __future__ import annotations

from typing import Any

import attrs

from gateway.platform import params as fields
from gateway.platform.errors import ApiError, invalid_request
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.options import ServiceOptions, parse_service
from providers.catalog import ModelInfo

MAX_INPUTS = 2048  # the spec's batch bound, and OpenAI's
ENCODINGS = ("float", "base64")

# Models trained to be cut short (Matryoshka representations), by upstream id prefix. The
# catalog's `limits.dimensions` is every model's native width and says nothing about
# shortening, and the vendors refuse `dimensions` for the others (ada-002, mistral-embed,
# Cohere v3). This belongs in the catalog; see the hand-over note.
SHORTENABLE_FAMILIES = (
    "text-embedding-3-",
    "gemini-embedding-",
    "text-embedding-004",
    "embed-v4",
    "codestral-embed",
)


@attrs.frozen
class EmbeddingParams:
    """A validated embeddings request as the client asked it (model not yet resolved)."""

    model: str
    inputs: tuple[str, ...]
    encoding_format: str
    dimensions: int | None
    user: str | None
    provider: str | None
    service: ServiceOptions


def invalid_input(message: str, *, param: str = "input", value: Any = None) -> ApiError:
    """400 `invalid_input`: the spec names the code; 400 because the body is at fault."""
    return ApiError(400, "invalid_input", message, param=param, value=value)


def parse_embeddings_body(body: Any) -> EmbeddingParams:
    """Validate a decoded JSON body; raise a 400 `ApiError` on the first problem found."""
    body = fields.body_object(body)
    model = fields.required_string(body, "model")
    fields.not_auto(model)
    return EmbeddingParams(
        model=model,
        inputs=parse_inputs(body.get("input")),
        encoding_format=_encoding_format(body.get("encoding_format")),
        dimensions=fields.optional_positive_int(body, "dimensions"),
        user=fields.optional_string(body, "user"),
        provider=fields.optional_string(body, "provider"),
        service=parse_service(body.get("service")),
    )


def parse_inputs(value: Any) -> tuple[str, ...]:
    """A string or 1..2048 non-empty strings.

    Token arrays (OpenAI's pre-tokenized form) are refused: the canonical request carries
    text only, and no vendor but OpenAI could read OpenAI's token ids anyway.
    """
    if value is None:
        raise invalid_input("'input' is required.")
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise invalid_input(
            "'input' must be a string or a non-empty array of strings.", value=_preview(value)
        )
    if len(items) > MAX_INPUTS:
        raise invalid_input(
            f"'input' holds {len(items)} items; at most {MAX_INPUTS} are allowed per call.",
            value=len(items),
        )
    if _looks_tokenized(items):
        raise invalid_input(
            "Token arrays are not supported: send the text itself as strings.",
            value=_preview(value),
        )
    return tuple(_input_item(item, index) for index, item in enumerate(items))


def _input_item(item: Any, index: int) -> str:
    where = f"input[{index}]"
    if not isinstance(item, str):
        raise invalid_input(f"'{where}' must be a string.", param=where, value=_preview(item))
    if not item:
        raise invalid_input(f"'{where}' is empty; every input needs text.", param=where, value=item)
    return item


def _looks_tokenized(items: list[Any]) -> bool:
    first = items[0]
    is_int = isinstance(first, int) and not isinstance(first, bool)
    return is_int or (isinstance(first, list) and all(isinstance(t, int) for t in first))


def _preview(value: Any) -> Any:
    """The offending value, cut short: a 2048-item array echoed back helps nobody."""
    text = repr(value)
    return value if len(text) <= 200 else text[:200] + "..."


def _encoding_format(value: Any) -> str:
    if value is None:
        return "float"
    if value not in ENCODINGS:
        raise invalid_request(
            "'encoding_format' must be 'float' or 'base64'.", param="encoding_format", value=value
        )
    return str(value)


# -- against the resolved model -------------------------------------------------------------


def check_for_model(params: EmbeddingParams, info: ModelInfo | None) -> None:
    """The model-dependent rules; a model outside the catalog (forced provider) is the
    vendor's to judge."""
    if info is None:
        return
    if params.dimensions is not None:
        check_dimensions(params.dimensions, info)
    check_token_limit(params.inputs, info)


def can_shorten(info: ModelInfo) -> bool:
    return info.upstream_id.startswith(SHORTENABLE_FAMILIES)


def check_dimensions(dimensions: int, info: ModelInfo) -> None:
    if not can_shorten(info):
        raise invalid_request(
            f"The model '{info.id}' does not support 'dimensions'.",
            param="dimensions",
            value=dimensions,
        )
    native = info.limits.get("dimensions")
    if native is not None and dimensions > native:
        raise invalid_request(
            f"'dimensions' must be between 1 and {native} for '{info.id}'.",
            param="dimensions",
            value=dimensions,
        )


def check_token_limit(inputs: tuple[str, ...], info: ModelInfo) -> None:
    """400 `token_limit_exceeded` for the first input over the model's maximum input tokens.

    A 400, not the 429 of the rate-limit family that shares the code: waiting won't help.
    """
    limit = info.context_window
    for index, text in enumerate(inputs):
        tokens = estimate_tokens(text)
        if tokens > limit:
            raise ApiError(
                400,
                "token_limit_exceeded",
                f"'input[{index}]' is about {tokens} tokens; '{info.id}' reads at most {limit}.",
                param=f"input[{index}]",
                index=index,
                model=info.id,
                max_tokens=limit,
                requested_tokens=tokens,
            )


def token_estimate(inputs: tuple[str, ...]) -> int:
    """Prompt tokens when the vendor reports none."""
    return sum(estimate_tokens(text) for text in inputs)
