"""The pure rules of the retrieval endpoints (embeddings and rerank), as tables."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from gateway.platform.errors import ApiError
from gateway.retrieval import embedding_input as emb
from gateway.retrieval import rerank_input as rr
from gateway.retrieval.embeddings import base64_vector
from gateway.retrieval.rerank import ranked
from providers import tokenizers
from providers.catalog import ModelInfo, load_catalog
from providers.types import RerankHit


def model(name: str) -> ModelInfo:
    info = load_catalog().model(name)
    assert info is not None
    return info


def error_of(call: Any, *args: Any) -> tuple[int, str, Any]:
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value.status, caught.value.code, caught.value.extra.get("param")


# -- embeddings ----------------------------------------------------------------------------

GOOD = {"model": "text-embedding-3-small", "input": ["a", "b"]}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"model": "m", "input": "one"}, (("one",), "float", None)),
        ({"model": "m", "input": ["a"] * 2048}, (("a",) * 2048, "float", None)),
        ({**GOOD, "encoding_format": "base64"}, (("a", "b"), "base64", None)),
        ({**GOOD, "dimensions": 8}, (("a", "b"), "float", 8)),
        ({"model": "m", "input": [" "]}, ((" ",), "float", None)),  # whitespace is text
    ],
)
def test_embedding_bodies_that_parse(body: dict[str, Any], expected: tuple[Any, ...]) -> None:
    params = emb.parse_embeddings_body(body)
    assert (params.inputs, params.encoding_format, params.dimensions) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], (400, "invalid_request", None)),
        ({"input": "x"}, (400, "invalid_request", "model")),
        ({"model": "auto", "input": "x"}, (400, "invalid_request", "model")),
        ({"model": "m"}, (400, "invalid_input", "input")),
        ({"model": "m", "input": []}, (400, "invalid_input", "input")),
        ({"model": "m", "input": ""}, (400, "invalid_input", "input[0]")),
        ({"model": "m", "input": ["a", ""]}, (400, "invalid_input", "input[1]")),
        ({"model": "m", "input": ["a", None]}, (400, "invalid_input", "input[1]")),
        ({"model": "m", "input": {"text": "a"}}, (400, "invalid_input", "input")),
        ({"model": "m", "input": ["a"] * 2049}, (400, "invalid_input", "input")),
        ({"model": "m", "input": [1, "a"]}, (400, "invalid_input", "input[0]")),
        ({"model": "m", "input": [[1, 2], "a"]}, (400, "invalid_input", "input[1]")),
        ({"model": "m", "input": [[1, 2], []]}, (400, "invalid_input", "input[1]")),
        ({"model": "m", "input": [[1, True]]}, (400, "invalid_input", "input[0]")),
        ({"model": "m", "input": [[1, 100261]]}, (400, "invalid_input", "input[0]")),
        ({"model": "m", "input": [-5]}, (400, "invalid_input", "input[0]")),
        ({**GOOD, "encoding_format": "int8"}, (400, "invalid_request", "encoding_format")),
        ({**GOOD, "dimensions": 0}, (400, "invalid_request", "dimensions")),
        ({**GOOD, "dimensions": True}, (400, "invalid_request", "dimensions")),
        ({**GOOD, "dimensions": 1.5}, (400, "invalid_request", "dimensions")),
        ({**GOOD, "user": 7}, (400, "invalid_request", "user")),
        ({**GOOD, "provider": ["openai"]}, (400, "invalid_request", "provider")),
        ({**GOOD, "service": {"fallbacks": "x"}}, (400, "invalid_request", "service.fallbacks")),
    ],
)
def test_embedding_bodies_that_fail(body: Any, expected: tuple[int, str, Any]) -> None:
    assert error_of(emb.parse_embeddings_body, body) == expected


@pytest.mark.parametrize(
    ("name", "dimensions", "ok"),
    [
        ("text-embedding-3-small", 1, True),
        ("text-embedding-3-small", 1536, True),
        ("text-embedding-3-small", 1537, False),
        ("text-embedding-3-large", 3072, True),
        ("gemini-embedding-001", 768, True),
        ("text-embedding-ada-002", 256, False),
        ("mistral-embed", 256, False),
        ("embed-english-v3.0", 256, False),
    ],
)
def test_which_models_shorten_their_vectors(name: str, dimensions: int, ok: bool) -> None:
    params = emb.parse_embeddings_body({"model": name, "input": "x", "dimensions": dimensions})
    if ok:
        emb.check_for_model(params, model(name))
    else:
        assert error_of(emb.check_for_model, params, model(name)) == (
            400,
            "invalid_request",
            "dimensions",
        )


@pytest.mark.parametrize(
    ("name", "chars", "ok"),
    [
        ("embed-english-v3.0", 512 * 4, True),
        ("embed-english-v3.0", 512 * 4 + 1, False),
        ("text-embedding-3-small", 8191 * 4, True),
        ("text-embedding-3-small", 8191 * 4 + 1, False),
    ],
)
def test_the_token_limit_is_per_input(name: str, chars: int, ok: bool) -> None:
    params = emb.parse_embeddings_body({"model": name, "input": ["short", "x" * chars]})
    if ok:
        emb.check_for_model(params, model(name))
        return
    with pytest.raises(ApiError) as caught:
        emb.check_for_model(params, model(name))
    assert (caught.value.status, caught.value.code) == (400, "token_limit_exceeded")
    assert caught.value.extra["index"] == 1
    assert caught.value.extra["max_tokens"] == model(name).context_window


def test_token_ids_are_decoded_and_counted() -> None:
    """Token ids (LangChain's default) become text for the vendors that read text, and
    count as themselves against the model's limit."""
    ids = tokenizers.encoding().encode("The river flows north.")
    params = emb.parse_embeddings_body({"model": "m", "input": ids})
    assert params.inputs == ("The river flows north.",)
    assert params.token_inputs == (tuple(ids),)
    assert emb.token_estimate(params) == len(ids)
    many = emb.parse_embeddings_body({"model": "m", "input": [ids, ids[:2]]})
    assert many.input_tokens() == [len(ids), 2]
    over = emb.parse_embeddings_body({"model": "m", "input": [[13] * 513]})
    with pytest.raises(ApiError) as caught:
        emb.check_for_model(over, model("embed-english-v3.0"))
    assert caught.value.extra["requested_tokens"] == 513  # counted, not estimated
    emb.check_for_model(
        emb.parse_embeddings_body({"model": "m", "input": [[13] * 512]}),
        model("embed-english-v3.0"),
    )


def test_a_model_outside_the_catalog_is_the_vendors_to_judge() -> None:
    params = emb.parse_embeddings_body({"model": "x", "input": "y" * 10**6, "dimensions": 9})
    emb.check_for_model(params, None)


def test_base64_is_little_endian_float32() -> None:
    assert base64_vector([1.0, -2.0]) == "AACAPwAAAMA="


# -- rerank --------------------------------------------------------------------------------

DOCS = ["alpha", {"text": "beta", "id": "b"}, {"text": "gamma", "id": 3}]
RERANK = {"model": "rerank-v3.5", "query": "q", "documents": DOCS}


def test_a_rerank_body_parses() -> None:
    params = rr.parse_rerank_body({**RERANK, "top_n": 3, "return_documents": True})
    assert [(d.text, d.id) for d in params.documents] == [
        ("alpha", None),
        ("beta", "b"),
        ("gamma", 3),
    ]
    assert (params.top_n, params.return_documents) == (3, True)
    assert rr.parse_rerank_body(RERANK).return_documents is False


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"query": None}, (400, "invalid_request", "query")),
        ({"query": "   "}, (400, "invalid_request", "query")),
        ({"query": "x" * (2048 * 4 + 1)}, (400, "query_too_long", "query")),
        ({"documents": None}, (400, "invalid_documents", "documents")),
        ({"documents": []}, (400, "invalid_documents", "documents")),
        ({"documents": {"text": "a"}}, (400, "invalid_documents", "documents")),
        ({"documents": ["a", ""]}, (400, "invalid_documents", "documents[1]")),
        ({"documents": ["a", 1]}, (400, "invalid_documents", "documents[1]")),
        ({"documents": [{"id": "a"}]}, (400, "invalid_documents", "documents[0]")),
        ({"documents": [{"text": "a", "id": True}]}, (400, "invalid_documents", "documents[0].id")),
        ({"documents": [{"text": "a", "id": [1]}]}, (400, "invalid_documents", "documents[0].id")),
        ({"documents": ["a"] * 1001}, (400, "too_many_documents", "documents")),
        ({"top_n": 0}, (400, "invalid_request", "top_n")),
        ({"top_n": 4}, (400, "invalid_top_n", "top_n")),
        ({"top_n": "2"}, (400, "invalid_request", "top_n")),
        ({"return_documents": 1}, (400, "invalid_request", "return_documents")),
        ({"model": "auto"}, (400, "invalid_request", "model")),
    ],
)
def test_rerank_bodies_that_fail(changes: dict[str, Any], expected: tuple[int, str, Any]) -> None:
    body = {k: v for k, v in {**RERANK, **changes}.items() if v is not None}
    assert error_of(rr.parse_rerank_body, body) == expected


def test_the_models_own_bounds_apply_when_tighter() -> None:
    info = model("rerank-v3.5")
    small = attrs.evolve(info, limits={"max_documents": 2})
    params = rr.parse_rerank_body(RERANK)
    rr.check_for_model(params, info)
    assert error_of(rr.check_for_model, params, small)[1] == "too_many_documents"
    narrow = attrs.evolve(info, context_window=4)
    long_query = rr.parse_rerank_body({**RERANK, "query": "x" * 17})
    assert error_of(rr.check_for_model, long_query, narrow)[1] == "query_too_long"


def test_rerank_ranking_is_best_first_and_cut_to_top_n() -> None:
    hits = [RerankHit(0, 0.2), RerankHit(1, 0.9), RerankHit(2, 0.9), RerankHit(3, 0.5)]
    assert [h.index for h in ranked(hits, None)] == [1, 2, 3, 0]
    assert [h.index for h in ranked(hits, 2)] == [1, 2]


def test_rerank_tokens_count_the_query_once_per_document() -> None:
    params = rr.parse_rerank_body({**RERANK, "query": "abcd", "documents": ["abcdefgh", "ab"]})
    assert rr.token_estimate(params) == (1 + 2) + (1 + 1)


@pytest.mark.parametrize("option", ["rate_limit_handling", "retry"])
@pytest.mark.parametrize("value", [False, 0, "", []])
def test_a_service_option_that_is_not_an_object_is_refused(option: str, value: Any) -> None:
    """`service.retry: false` was read as `{}` (schemathesis, negative data on /v1/rerank)."""
    service = {"service": {option: value}}
    rerank = {"model": "m", "query": "q", "documents": ["d"]} | service
    assert error_of(rr.parse_rerank_body, rerank) == (400, "invalid_request", "service")
    assert error_of(emb.parse_embeddings_body, GOOD | service) == (
        400,
        "invalid_request",
        "service",
    )
