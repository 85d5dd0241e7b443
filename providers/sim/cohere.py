"""Simulated Cohere API: `/v2/chat`, `/v2/rerank`, `/v2/embed` and `/v1/models`, with
Cohere's shapes (chat's own checks and events live in `providers.sim.cohere_chat`).

Rerank scores are deterministic and explainable: the share of the query's words found in
the document, plus a tiny hash-derived tie-breaker, so tests can predict the order.
Errors are Cohere's bare `{"id", "message"}` bodies with the status carrying the meaning.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from providers.sim import content
from providers.sim.catalog_models import vendor_models
from providers.sim.cohere_chat import ChatRefusal, answer_json, plan_chat, stream_events
from providers.sim.core import Fault, Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import MODEL_LIST, apply_fault

VENDOR = "cohere"
MAX_DOCUMENTS = 1000
MAX_TEXTS = 96
DOCUMENTS_PER_SEARCH_UNIT = 100
_WORD = re.compile(r"\w+")
_TIE_WEIGHT = 0.01
_V4_DIMENSIONS = (256, 512, 1024, 1536)
_EMBED_TYPES = ("float", "int8", "uint8", "base64")
_INPUT_TYPES = ("search_document", "search_query", "classification", "clustering")

# (name, endpoints, context length): what `GET /v1/models` lists.
MODELS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("rerank-v3.5", ("rerank",), 4096),
    ("rerank-english-v3.0", ("rerank",), 4096),
    ("rerank-multilingual-v3.0", ("rerank",), 4096),
    ("embed-v4.0", ("embed",), 128000),
    ("embed-english-v3.0", ("embed",), 512),
    ("embed-multilingual-v3.0", ("embed",), 512),
    ("embed-english-light-v3.0", ("embed",), 512),
    ("embed-multilingual-light-v3.0", ("embed",), 512),
    ("command-a-03-2025", ("chat",), 256000),
)
_ENDPOINTS = {"chat": "chat", "embedding": "embed", "rerank": "rerank"}
MODELS += tuple(
    (m.upstream_id, (_ENDPOINTS[m.type],), m.context_window)
    for m in vendor_models("cohere")
    if m.upstream_id not in {name for name, _, _ in MODELS}
)
_DEFAULT_STATUS_MESSAGES = {
    400: "invalid request",
    401: "invalid api token",
    404: "not found",
    422: "unprocessable entity",
    429: "You are past the rate limit of this API key; please slow down.",
    500: "internal server error",
    503: "service unavailable",
}


class _Refusal(Exception):
    """A request the simulated Cohere refuses; becomes a `{"message"}` answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str | None = None) -> SimResponse:
    text = message or _DEFAULT_STATUS_MESSAGES.get(status, f"error {status}")
    return SimResponse.of_json({"id": str(uuid.uuid4()), "message": text}, status=status)


def _request_id(body: bytes) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(body).digest()[:16]))


def _meta(**billed: float) -> dict[str, Any]:
    return {"api_version": {"version": "2"}, "billed_units": billed}


# -- checks shared by the routes ------------------------------------------------------------


def _authorized(request: SimRequest) -> bool:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def _body(request: SimRequest) -> dict[str, Any]:
    try:
        body = request.json()
    except ValueError:
        raise _Refusal(400, "invalid request: body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _Refusal(400, "invalid request: body must be a JSON object")
    return body


def _model(body: Mapping[str, Any], endpoint: str) -> str:
    """The requested model, able to serve `endpoint`.

    As in every vendor of the simulator, a model whose id starts with `unknown` does not
    exist (404); a listed model of another kind is refused (400); any other id is served.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _Refusal(400, "invalid request: model must be specified")
    if model.startswith("unknown"):
        raise _Refusal(
            404,
            f"model '{model}' not found, make sure the correct model ID was used "
            "and that you have access to the model.",
        )
    endpoints = next((eps for name, eps, _ in MODELS if name == model), (endpoint,))
    if endpoint not in endpoints:
        raise _Refusal(400, f"invalid request: model '{model}' does not support {endpoint}")
    return model


async def _guarded(
    request: SimRequest, context: SimContext, endpoint: str
) -> tuple[dict[str, Any], str]:
    """The checked body and model of a request, after auth and any fault."""
    if not _authorized(request):
        raise _Refusal(401, "no api key supplied")
    body = _body(request)
    model = _model(body, endpoint)
    await apply_fault(context.fault(model, VENDOR), _refusal)
    return body, model


# -- chat -----------------------------------------------------------------------------------


async def chat(request: SimRequest, context: SimContext) -> SimResponse | SimStream:
    """`POST /v2/chat`, whole or streamed (`"stream": true`)."""
    try:
        if not _authorized(request):
            raise _Refusal(401, "no api key supplied")
        body = _body(request)
        fault = context.fault(_model(body, "chat"), VENDOR)
        await apply_fault(fault, _refusal)
        plan = plan_chat(body, context)
    except (_Refusal, ChatRefusal) as refusal:
        return error_response(refusal.status, refusal.message)
    if body.get("stream"):
        return SimStream(stream_events(plan, context, fault))
    await context.pace_whole(plan.tokens or [""], fault)
    return SimResponse.of_json(answer_json(plan))


# -- rerank ---------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def relevance(query: str, document: str) -> float:
    """The share of the query's words found in the document, lifted by a hash tie-breaker
    below 0.01, kept in [0, 1]."""
    wanted = _words(query)
    overlap = len(wanted & _words(document)) / len(wanted) if wanted else 0.0
    digest = hashlib.sha256(f"{query}\x00{document}".encode()).digest()
    tie = int.from_bytes(digest[:4], "big") / 2**32
    return round((1 - _TIE_WEIGHT) * overlap + _TIE_WEIGHT * tie, 6)


def rank(query: str, documents: Sequence[str], top_n: int | None) -> list[dict[str, Any]]:
    """Results best first (ties by position), cut to `top_n`."""
    scored = [(relevance(query, doc), index) for index, doc in enumerate(documents)]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [{"index": index, "relevance_score": score} for score, index in scored[:top_n]]


def _rerank_inputs(body: Mapping[str, Any]) -> tuple[str, list[str], int | None]:
    query, documents, top_n = body.get("query"), body.get("documents"), body.get("top_n")
    if not isinstance(query, str) or not query.strip():
        raise _Refusal(400, "invalid request: query must not be empty")
    if not isinstance(documents, list) or not documents:
        raise _Refusal(400, "invalid request: list of documents must not be empty")
    if len(documents) > MAX_DOCUMENTS:
        raise _Refusal(
            400, f"invalid request: too many documents, at most {MAX_DOCUMENTS} are allowed"
        )
    if not all(isinstance(doc, str) for doc in documents):
        raise _Refusal(400, "invalid request: documents must be strings")
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
        raise _Refusal(400, "invalid request: top_n must be a positive integer")
    return query, documents, top_n


async def rerank(request: SimRequest, context: SimContext) -> SimResponse:
    """`POST /v2/rerank`."""
    try:
        body, _ = await _guarded(request, context, "rerank")
        query, documents, top_n = _rerank_inputs(body)
    except _Refusal as refusal:
        return error_response(refusal.status, refusal.message)
    units = math.ceil(len(documents) / DOCUMENTS_PER_SEARCH_UNIT)
    return SimResponse.of_json(
        {
            "id": _request_id(request.body),
            "results": rank(query, documents, top_n),
            "meta": _meta(search_units=units),
        }
    )


# -- embed ----------------------------------------------------------------------------------


def dimensions_for(model: str, requested: Any) -> int:
    """The vector size: embed-v4.0 1536 (or one of its shorter sizes), light v3 models 384,
    other v3 models 1024; only v4 accepts `output_dimension`."""
    if model.startswith("embed-v4"):
        if requested is None:
            return 1536
        if requested not in _V4_DIMENSIONS:
            raise _Refusal(
                400, f"invalid request: output_dimension must be one of {_V4_DIMENSIONS}"
            )
        return int(requested)
    if requested is not None:
        raise _Refusal(400, f"invalid request: model '{model}' does not support output_dimension")
    return 384 if "light" in model else 1024


def _embed_inputs(body: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    texts = body.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _Refusal(400, "invalid request: texts must be a non-empty list of strings")
    if len(texts) > MAX_TEXTS:
        raise _Refusal(400, f"invalid request: texts can contain at most {MAX_TEXTS} items")
    if body.get("input_type") not in _INPUT_TYPES:
        raise _Refusal(
            400, "invalid request: valid input_type must be provided with the provided model"
        )
    kinds = body.get("embedding_types") or ["float"]
    if not isinstance(kinds, list) or any(kind not in _EMBED_TYPES for kind in kinds):
        raise _Refusal(400, f"invalid request: embedding_types must be among {_EMBED_TYPES}")
    return texts, kinds


def encode_vectors(vectors: list[list[float]], kind: str) -> list[Any]:
    """Vectors in one of the encodings Cohere offers (binary ones are not simulated)."""
    if kind == "int8":
        return [[round(x * 127) for x in vector] for vector in vectors]
    if kind == "uint8":
        return [[round(x * 127) + 128 for x in vector] for vector in vectors]
    if kind == "base64":
        return [
            base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            for vector in vectors
        ]
    return vectors


async def embed(request: SimRequest, context: SimContext) -> SimResponse:
    """`POST /v2/embed`."""
    try:
        body, model = await _guarded(request, context, "embed")
        texts, kinds = _embed_inputs(body)
        size = dimensions_for(model, body.get("output_dimension"))
    except _Refusal as refusal:
        return error_response(refusal.status, refusal.message)
    vectors = [content.embedding(text, size) for text in texts]
    return SimResponse.of_json(
        {
            "id": _request_id(request.body),
            "embeddings": {kind: encode_vectors(vectors, kind) for kind in kinds},
            "texts": texts,
            "meta": _meta(input_tokens=sum(content.count_tokens(text) for text in texts)),
            "response_type": "embeddings_by_type",
        }
    )


# -- models ---------------------------------------------------------------------------------


def model_card(name: str, endpoints: Sequence[str], context_length: int) -> dict[str, Any]:
    return {
        "name": name,
        "endpoints": list(endpoints),
        "finetuned": False,
        "context_length": context_length,
        "tokenizer_url": None,
        "default_endpoints": list(endpoints),
    }


async def list_models(request: SimRequest, context: SimContext) -> SimResponse:
    """`GET /v1/models`, optionally filtered by `?endpoint=`; obeys the faults naming
    `MODEL_LIST` (the gateway's probes)."""
    if not _authorized(request):
        return error_response(401, "no api key supplied")
    try:
        await apply_fault(context.fault(MODEL_LIST, VENDOR), _refusal)
    except _Refusal as refusal:
        return error_response(refusal.status, refusal.message)
    wanted = request.query.get("endpoint")
    cards = [
        model_card(name, endpoints, length)
        for name, endpoints, length in MODELS
        if wanted is None or wanted in endpoints
    ]
    return SimResponse.of_json({"models": cards, "next_page_token": None})


ROUTES: list[Route] = [
    Route("POST", "/v2/chat", chat),
    Route("POST", "/v2/rerank", rerank),
    Route("POST", "/v2/embed", embed),
    Route("GET", "/v1/models", list_models),
]


def _refusal(fault: Fault, status: int) -> _Refusal:
    return _Refusal(status, fault.message or _DEFAULT_STATUS_MESSAGES.get(status, ""))
