"""Reading and checking an embeddings request: pure, so that every rule is a table test.

Two stages. `parse_embeddings_body` checks what needs no model (shapes, the 2048-item batch
bound, encodings). `check_for_model` checks what depends on the model the request resolved
to: whether it may shorten its vectors (`dimensions`) and each input against its maximum
input tokens (estimated at about four characters a token, as for chat; counted exactly
for token ids).

`input` may be token ids, as OpenAI takes them (a list of integers, or a list of lists):
they are kept for the vendors that read them (OpenAI) and decoded to text, with the
tokenizer the client used (`providers.tokenizers`), for the others.
"""

from __future__ import annotations

from typing import Any

import attrs

from gateway.platform import params as fields
from gateway.platform.errors import ApiError, invalid_request
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.options import ServiceOptions, parse_service
from providers import tokenizers
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
    token_inputs: tuple[tuple[int, ...], ...] | None = None
    """The inputs as the client's token ids, when it sent ids (`inputs` is their text)."""

    def input_tokens(self) -> list[int]:
        """Each input's tokens: counted for token ids, estimated for text."""
        if self.token_inputs is not None:
            return [len(tokens) for tokens in self.token_inputs]
        return [estimate_tokens(text) for text in self.inputs]


def invalid_input(message: str, *, param: str = "input", value: Any = None) -> ApiError:
    """400 `invalid_input`: the spec names the code; 400 because the body is at fault."""
    return ApiError(400, "invalid_input", message, param=param, value=value)


def parse_embeddings_body(body: Any) -> EmbeddingParams:
    """Validate a decoded JSON body; raise a 400 `ApiError` on the first problem found."""
    body = fields.body_object(body)
    model = fields.required_string(body, "model")
    fields.not_auto(model)
    inputs, token_inputs = parse_inputs(body.get("input"))
    return EmbeddingParams(
        model=model,
        inputs=inputs,
        token_inputs=token_inputs,
        encoding_format=_encoding_format(body.get("encoding_format")),
        dimensions=fields.optional_positive_int(body, "dimensions"),
        user=fields.optional_string(body, "user"),
        provider=fields.optional_string(body, "provider"),
        service=parse_service(body.get("service")),
    )


def parse_inputs(value: Any) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...] | None]:
    """The texts of a string or 1..2048 non-empty strings, or of token ids (a list of
    integers is one input, a list of lists several), with the ids themselves."""
    if value is None:
        raise invalid_input("'input' is required.")
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise invalid_input(
            "'input' must be a string, an array of strings, or token ids.",
            value=_preview(value),
        )
    if _is_token_list(items):
        items = [items]  # one input given as token ids
    if len(items) > MAX_INPUTS:
        raise invalid_input(
            f"'input' holds {len(items)} items; at most {MAX_INPUTS} are allowed per call.",
            value=len(items),
        )
    if isinstance(items[0], list):
        token_inputs = tuple(_token_item(item, index) for index, item in enumerate(items))
        return tuple(_decoded(tokens, index) for index, tokens in enumerate(token_inputs)), (
            token_inputs
        )
    return tuple(_input_item(item, index) for index, item in enumerate(items)), None


def _is_token_list(items: list[Any]) -> bool:
    return all(isinstance(t, int) and not isinstance(t, bool) for t in items)


def _token_item(item: Any, index: int) -> tuple[int, ...]:
    where = f"input[{index}]"
    if not isinstance(item, list) or not _is_token_list(item):
        raise invalid_input(
            f"'{where}' must be an array of token ids, as the other inputs are.",
            param=where,
            value=_preview(item),
        )
    if not item:
        raise invalid_input(f"'{where}' has no tokens.", param=where, value=item)
    return tuple(item)


def _decoded(tokens: tuple[int, ...], index: int) -> str:
    where = f"input[{index}]"
    try:
        return tokenizers.decode(tokens)
    except tokenizers.UnknownToken as exc:
        raise invalid_input(
            f"'{where}' holds the token id {exc.token}, which is not in the cl100k_base "
            "encoding the ids are read with.",
            param=where,
            value=exc.token,
        ) from None


def _input_item(item: Any, index: int) -> str:
    where = f"input[{index}]"
    if not isinstance(item, str):
        raise invalid_input(f"'{where}' must be a string.", param=where, value=_preview(item))
    if not item:
        raise invalid_input(f"'{where}' is empty; every input needs text.", param=where, value=item)
    return item


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
    """The model-dependent rules; a model outside the catalog (forced provider, or
    pass-through) is the vendor's to judge."""
    if info is None or info.passthrough:
        return
    if params.dimensions is not None:
        check_dimensions(params.dimensions, info)
    check_token_limit(params, info)


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


def check_token_limit(params: EmbeddingParams, info: ModelInfo) -> None:
    """400 `token_limit_exceeded` for the first input over the model's maximum input tokens
    (token ids are counted, text estimated).

    A 400, not the 429 of the rate-limit family that shares the code: waiting won't help.
    """
    limit = info.context_window
    about = "" if params.token_inputs is not None else "about "
    for index, tokens in enumerate(params.input_tokens()):
        if tokens > limit:
            raise ApiError(
                400,
                "token_limit_exceeded",
                f"'input[{index}]' is {about}{tokens} tokens; '{info.id}' reads at most {limit}.",
                param=f"input[{index}]",
                index=index,
                model=info.id,
                max_tokens=limit,
                requested_tokens=tokens,
            )


def token_estimate(params: EmbeddingParams) -> int:
    """Prompt tokens when the vendor reports none (token ids counted, text estimated)."""
    return sum(params.input_tokens())
