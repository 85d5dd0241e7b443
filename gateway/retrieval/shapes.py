"""The declared shapes of `POST /v1/embeddings` and `POST /v1/rerank`: the bodies they
read and the answers they build, from which the OpenAPI document is written
(`gateway.platform.shapes`).

The bodies are read by hand (`embedding_input`, `rerank_input`: token ids decoded on the
way, each fault with the spec's own code); the bounds below are those parsers' constants,
so the two cannot drift apart in a number, and the schemathesis run
(tests/operator/test_fuzz.py) holds them to each other in shape.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

import attrs

from gateway.platform.shapes import SPACE, Choices, Count, Doc, Length, Pattern, Range, accepts_more
from gateway.retrieval.embedding_input import ENCODINGS, MAX_INPUTS
from gateway.retrieval.rerank_input import MAX_DOCUMENTS
from gateway.upstream.options import ServiceRequest, forced_provider

# Vectors and scores are only comparable within one model: retrieval takes no `auto`.
RetrievalModel = Annotated[
    str,
    Pattern(f"^(?!auto$).*[^{SPACE}]", "a model id other than 'auto'"),
    Doc("A model id, `provider/model`, or an alias (not `auto`)"),
]
Text = Annotated[str, Length(least=1)]
TokenIds = Annotated[list[Annotated[int, Range(least=0)]], Count(least=1)]

# -- embeddings ----------------------------------------------------------------------------

EmbeddingInput = Annotated[
    Text
    | Annotated[list[Text], Count(least=1, most=MAX_INPUTS)]
    | TokenIds
    | Annotated[list[TokenIds], Count(least=1, most=MAX_INPUTS)],
    Doc(
        f"A text, up to {MAX_INPUTS} texts, or token ids of cl100k_base (one input's, or "
        "one list per input); `invalid_input` for an id outside the encoding"
    ),
]


@accepts_more
@attrs.frozen
class EmbeddingsRequest:
    """An embeddings request (OpenAI's body, with the gateway's `provider` and `service`)."""

    model: RetrievalModel
    input: EmbeddingInput
    encoding_format: Annotated[str, Choices(ENCODINGS)] | None = None
    dimensions: (
        Annotated[int, Range(least=1), Doc("at most the model's width, where it can shorten")]
        | None
    ) = None
    user: str | None = None
    provider: forced_provider("embeddings") = None  # type: ignore[valid-type]
    service: ServiceRequest | None = None


class RetrievalCost(TypedDict):
    """What the call cost at list prices, in USD."""

    total: float


class RetrievalService(TypedDict):
    """The gateway's metadata of the call: who served it, how fast, at what cost."""

    request_id: str
    provider: str
    latency_ms: float
    cost: RetrievalCost


class EmbeddingItem(TypedDict):
    """One input's vector: floats, or little-endian float32 in base64 (`encoding_format`)."""

    object: Literal["embedding"]
    index: int
    embedding: list[float] | str


class EmbeddingsUsage(TypedDict):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsAnswer(TypedDict):
    """The vectors in the order of the inputs (OpenAI's shape) and the gateway's `service`."""

    object: Literal["list"]
    data: list[EmbeddingItem]
    model: str
    usage: EmbeddingsUsage
    service: RetrievalService


# -- rerank --------------------------------------------------------------------------------


@accepts_more
@attrs.frozen
class RerankDocumentObject:
    """A document with an id of the caller's, given back with it (`return_documents`)."""

    text: Text
    id: str | int | None = None


@accepts_more
@attrs.frozen
class RerankRequest:
    """A rerank request (Cohere's body, with the gateway's `provider` and `service`)."""

    model: RetrievalModel
    query: Annotated[str, Pattern(f"[^{SPACE}]", "a non-empty string")]
    documents: Annotated[
        list[Text | RerankDocumentObject],
        Count(least=1, most=MAX_DOCUMENTS),
        Doc(f"At most {MAX_DOCUMENTS}, or the model's own bound when lower"),
    ]
    top_n: (
        Annotated[int, Range(least=1), Doc("at most the number of documents (`invalid_top_n`)")]
        | None
    ) = None
    return_documents: bool | None = None
    provider: forced_provider("rerank") = None  # type: ignore[valid-type]
    service: ServiceRequest | None = None


class RerankedDocument(TypedDict):
    text: str
    id: NotRequired[str | int]


class RerankedItem(TypedDict):
    """One document's place: its index in the request and its score (higher is closer);
    the document itself with `return_documents`."""

    index: int
    relevance_score: float
    document: NotRequired[RerankedDocument]


class RerankBilledUnits(TypedDict):
    search_units: int


class RerankMeta(TypedDict):
    billed_units: RerankBilledUnits


class RerankAnswer(TypedDict):
    """The documents best first, at most `top_n` (Cohere's shape), and the gateway's
    `service`."""

    id: str
    results: list[RerankedItem]
    meta: RerankMeta
    service: RetrievalService
