"""Reading and checking a rerank request: pure, so that every rule is a table test.

Statuses: every rule here answers 400, since each is a fault of the body that a retry will not
cure. Codes from the spec: `invalid_documents` (missing, empty or malformed array, or a document
without text), `too_many_documents` (over 1000, or the model's own `limits.max_documents` when
lower), `query_too_long` (over `MAX_QUERY_TOKENS` estimated tokens, or the model's
context window when smaller: a cross-encoder reads query and document together, so a query
that fills the window leaves nothing of the document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from gateway.platform import params as fields
from gateway.platform.errors import ApiError
from gateway.upstream.accounting import estimate_tokens
from gateway.upstream.options import ServiceOptions, parse_service
from providers.catalog import ModelInfo

MAX_DOCUMENTS = 1000  # the spec's "usually up to 1000", and Cohere's bound
MAX_QUERY_TOKENS = 2048  # Cohere's documented query bound; ~8 KB of text


@attrs.frozen
class RerankDocument:
    text: str
    id: str | int | None = None


@attrs.frozen
class RerankParams:
    """A validated rerank request as the client asked it (model not yet resolved)."""

    model: str
    query: str
    documents: tuple[RerankDocument, ...]
    top_n: int | None
    return_documents: bool
    provider: str | None
    service: ServiceOptions


def invalid_documents(message: str, *, param: str = "documents", value: Any = None) -> ApiError:
    return ApiError(400, "invalid_documents", message, param=param, value=value)


def parse_rerank_body(body: Any) -> RerankParams:
    """Validate a decoded JSON body; raise a 400 `ApiError` on the first problem found."""
    body = fields.body_object(body)
    model = fields.required_string(body, "model")
    fields.not_auto(model)
    query = fields.required_string(body, "query")
    check_query_length(query, MAX_QUERY_TOKENS)
    documents = parse_documents(body.get("documents"))
    return RerankParams(
        model=model,
        query=query,
        documents=documents,
        top_n=_top_n(body, len(documents)),
        return_documents=fields.optional_bool(body, "return_documents"),
        provider=fields.optional_string(body, "provider"),
        service=parse_service(body.get("service")),
    )


def parse_documents(value: Any) -> tuple[RerankDocument, ...]:
    """1..1000 documents, each a non-empty string or an object {text, id?}."""
    if value is None:
        raise invalid_documents("'documents' is required: strings or objects {text, id}.")
    if not isinstance(value, list) or not value:
        raise invalid_documents(
            "'documents' must be a non-empty array of strings or objects {text, id}.",
            value=value,
        )
    check_document_count(len(value), MAX_DOCUMENTS)
    return tuple(_document(item, index) for index, item in enumerate(value))


def _document(item: Any, index: int) -> RerankDocument:
    where = f"documents[{index}]"
    text: Any
    doc_id: Any
    if isinstance(item, str):
        text, doc_id = item, None
    elif isinstance(item, dict):
        text, doc_id = item.get("text"), item.get("id")
    else:
        raise invalid_documents(
            f"'{where}' must be a string or an object {{text, id}}.", param=where, value=item
        )
    if not isinstance(text, str) or not text:
        raise invalid_documents(f"'{where}' needs non-empty text.", param=where, value=item)
    if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, str | int)):
        raise invalid_documents(
            f"'{where}.id' must be a string or an integer.", param=f"{where}.id", value=doc_id
        )
    return RerankDocument(text, doc_id)


def _top_n(body: Mapping[str, Any], count: int) -> int | None:
    top_n = fields.optional_positive_int(body, "top_n")
    if top_n is not None and top_n > count:
        raise ApiError(
            400,
            "invalid_top_n",
            f"'top_n' must be between 1 and the number of documents ({count}).",
            param="top_n",
            value=top_n,
        )
    return top_n


def check_document_count(count: int, limit: int) -> None:
    if count > limit:
        raise ApiError(
            400,
            "too_many_documents",
            f"'documents' holds {count} items; at most {limit} are allowed.",
            param="documents",
            value=count,
            max_documents=limit,
        )


def check_query_length(query: str, limit: int) -> None:
    tokens = estimate_tokens(query)
    if tokens > limit:
        raise ApiError(
            400,
            "query_too_long",
            f"'query' is about {tokens} tokens; at most {limit} are allowed.",
            param="query",
            max_tokens=limit,
            requested_tokens=tokens,
        )


# -- against the resolved model -------------------------------------------------------------


def check_for_model(params: RerankParams, info: ModelInfo | None) -> None:
    """The model's own bounds, where tighter than the gateway's (a pass-through model's
    are unknown: the vendor judges)."""
    if info is None or info.passthrough:
        return
    check_document_count(len(params.documents), info.limits.get("max_documents", MAX_DOCUMENTS))
    check_query_length(params.query, min(MAX_QUERY_TOKENS, info.context_window))


def token_estimate(params: RerankParams) -> int:
    """Tokens a cross-encoder reads: the query once per document, plus every document."""
    query = estimate_tokens(params.query)
    return sum(query + estimate_tokens(doc.text) for doc in params.documents)
