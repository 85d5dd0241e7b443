"""Cohere's pure translations: rerank and embed requests out, answers and errors in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers import errors
from providers.cohere import (
    MAX_TEXTS_PER_CALL,
    embed_payload,
    map_cohere_error,
    parse_embed,
    parse_model_names,
    parse_rerank,
    rerank_payload,
)
from providers.http import batches, merge_embeddings
from providers.types import EmbeddingRequest, RerankHit, RerankRequest, Usage


@pytest.mark.parametrize(
    ("request_", "limit", "expected"),
    [
        (
            RerankRequest(model="rerank-v3.5", query="q", documents=["a", "b"]),
            None,
            {"model": "rerank-v3.5", "query": "q", "documents": ["a", "b"]},
        ),
        (
            RerankRequest(model="rerank-v3.5", query="q", documents=("a",), top_n=1),
            512,
            {
                "model": "rerank-v3.5",
                "query": "q",
                "documents": ["a"],
                "top_n": 1,
                "max_tokens_per_doc": 512,
            },
        ),
    ],
)
def test_rerank_payload(request_: RerankRequest, limit: int | None, expected: Any) -> None:
    assert rerank_payload(request_, max_tokens_per_doc=limit) == expected


@pytest.mark.parametrize(
    ("request_", "input_type", "expected"),
    [
        (
            EmbeddingRequest(model="embed-english-v3.0", inputs=["a", "b"], user="u"),
            "search_document",
            {
                "model": "embed-english-v3.0",
                "texts": ["a", "b"],
                "input_type": "search_document",
                "embedding_types": ["float"],
            },
        ),
        (
            EmbeddingRequest(model="embed-v4.0", inputs=["a"], dimensions=256),
            "search_query",
            {
                "model": "embed-v4.0",
                "texts": ["a"],
                "input_type": "search_query",
                "embedding_types": ["float"],
                "output_dimension": 256,
            },
        ),
    ],
)
def test_embed_payload(request_: EmbeddingRequest, input_type: str, expected: Any) -> None:
    assert embed_payload(request_, request_.inputs, input_type) == expected


@pytest.mark.parametrize(
    ("count", "sizes"), [(0, []), (96, [96]), (97, [96, 1]), (200, [96, 96, 8])]
)
def test_batches(count: int, sizes: list[int]) -> None:
    texts = [str(i) for i in range(count)]
    parts = batches(texts, MAX_TEXTS_PER_CALL)
    assert [len(part) for part in parts] == sizes
    assert [text for part in parts for text in part] == texts


RERANK_ANSWER = {
    "id": "r1",
    "results": [
        {"index": 2, "relevance_score": 0.5},
        {"index": 0, "relevance_score": 0.9},
        {"index": 1, "relevance_score": 0.5},
    ],
    "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 2}},
}


@pytest.mark.parametrize(
    ("data", "hits", "units"),
    [
        (
            RERANK_ANSWER,
            [RerankHit(0, 0.9), RerankHit(1, 0.5), RerankHit(2, 0.5)],
            2,
        ),
        ({"id": "r2", "results": []}, [], 1),
        (
            {"results": [{"index": 0, "relevance_score": 0.1}], "meta": {"billed_units": {}}},
            [RerankHit(0, 0.1)],
            1,
        ),
    ],
    ids=["sorted-with-units", "empty-no-meta", "no-units"],
)
def test_parse_rerank(data: Any, hits: list[RerankHit], units: int) -> None:
    result = parse_rerank(data, "rerank-v3.5")
    assert list(result.hits) == hits
    assert result.search_units == units
    assert result.model == "rerank-v3.5"


def test_parse_and_merge_embed() -> None:
    first = {
        "id": "e1",
        "embeddings": {"float": [[0.1, 0.2], [0.3, 0.4]]},
        "texts": ["a", "b"],
        "meta": {"billed_units": {"input_tokens": 2}},
        "response_type": "embeddings_by_type",
    }
    second = {"id": "e2", "embeddings": {"float": [[0.5, 0.6]]}, "meta": {}}
    parts = [parse_embed(first), parse_embed(second)]
    assert parts[1] == ([[0.5, 0.6]], 0)
    result = merge_embeddings("embed-english-v3.0", parts)
    assert result.vectors == [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
    assert result.usage == Usage(prompt_tokens=2)


def test_parse_model_names() -> None:
    data = {"models": [{"name": "rerank-v3.5"}, {"name": "embed-english-v3.0"}, {}]}
    assert parse_model_names(data) == ["rerank-v3.5", "embed-english-v3.0"]


def _message(text: str) -> bytes:
    return json.dumps({"message": text}).encode()


ERRORS: list[tuple[int, bytes, type[errors.ProviderError]]] = [
    (
        400,
        _message("invalid request: list of documents must not be empty"),
        errors.InvalidUpstreamRequest,
    ),
    (401, _message("invalid api token"), errors.AuthenticationFailed),
    (403, _message("forbidden"), errors.AuthenticationFailed),
    (498, _message("invalid token"), errors.AuthenticationFailed),
    (404, _message("model 'nope' not found"), errors.ModelNotFound),
    (422, _message("unprocessable"), errors.InvalidUpstreamRequest),
    (429, _message("You are using a Trial key"), errors.ModelOverloaded),
    (500, _message("internal server error"), errors.UpstreamHTTPError),
    (502, b"<html/>", errors.UpstreamHTTPError),
    (503, _message("unavailable"), errors.UpstreamUnavailable),
    (504, b"", errors.UpstreamTimeout),
]


@pytest.mark.parametrize(("status", "body", "cls"), ERRORS)
def test_error_status_maps_to_class(
    status: int, body: bytes, cls: type[errors.ProviderError]
) -> None:
    error = map_cohere_error("cohere", status, body, {"retry-after": "2"}, "m")
    assert type(error) is cls
    assert error.provider == "cohere"


def test_error_message_and_retry_after_are_kept() -> None:
    error = map_cohere_error("cohere", 429, _message("slow down"), {"retry-after": "2"}, "m")
    assert isinstance(error, errors.ModelOverloaded)
    assert (error.message, error.retry_after, error.model) == ("slow down", 2, "m")
    plain = map_cohere_error("cohere", 500, b"oops", {}, "m")
    assert plain.message == "upstream answered HTTP 500"
