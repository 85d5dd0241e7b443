"""POST /v1/data/search: hybrid retrieval over the workspace's data documents.

Two rankings of the chunks the caller may see (workspace, readable classifications, the
request's filters, completed documents): cosine similarity of the query's embedding against
the workspace's in-memory vector index (`gateway.kernels.vectors.index`, one space per
embedding model; the query is embedded by the provider
that embedded those documents, so it stays in their region), and BM25 from SQLite FTS5. They
are fused by reciprocal rank (k = 60), which needs no score calibration between the two.
With `rerank`, the best fused candidates are reordered by a rerank model through the
gateway's rerank service (the engine: limits, usage and cost apply).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

import attrs
import trio

from gateway.documents import access
from gateway.documents.input import Classification
from gateway.documents.processing import Failed, embed
from gateway.documents.residency import EmbeddingTarget
from gateway.documents.search_input import SearchParams, search_body
from gateway.documents.services import DocumentsServices
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError
from store import documents as document_store
from store.documents import DocumentRecord

RRF_K = 60
CANDIDATES = 100
_WORD = re.compile(r"\w+", re.UNICODE)


class HitScores(TypedDict):
    """The hit's score in each ranking (null where it ranked in one only), fused by
    reciprocal rank, and the rerank model's relevance when reranked."""

    vector: float | None
    bm25: float | None
    fused: float
    rerank: NotRequired[float]


class SearchHit(TypedDict):
    """A chunk of a data document that matches the query (`score`: fused, or the rerank
    model's relevance when reranked)."""

    document_id: str
    document_name: str
    data_classification: Classification
    chunk_id: str
    chunk_index: int
    content: str
    page_number: int
    section_header: str | None
    score: float
    scores: HitScores


class SearchHits(TypedDict):
    """The best chunks, best first."""

    object: Literal["list"]
    query: str
    data: list[SearchHit]


@attrs.define
class _Hit:
    rowid: int
    vector: float | None = None
    bm25: float | None = None
    fused: float = 0.0


async def search(
    services: DocumentsServices, principal: Principal, body: Mapping[str, Any]
) -> SearchHits:
    principal.require("files")
    params = search_body(body)
    documents = await _documents(services, principal, params)
    hits: dict[int, _Hit] = {}
    if documents:
        await _rankings(services, principal, params, documents, hits)
    ranked = sorted(hits.values(), key=lambda h: (-h.fused, h.rowid))
    chosen = ranked[: params.top_k * 4 if params.rerank_model else params.top_k]
    chunks = await services.db.run(
        lambda d: document_store.chunks_by_rowid(d, [h.rowid for h in chosen])
    )
    results = [_result(h, chunks[h.rowid], documents) for h in chosen if h.rowid in chunks]
    if params.rerank_model and results:
        results = await _reranked(services, principal, params, results)
    return {"object": "list", "query": params.query, "data": results[: params.top_k]}


async def _documents(
    services: DocumentsServices, principal: Principal, params: SearchParams
) -> dict[str, DocumentRecord]:
    """The completed documents the caller may see that match the filters, by id."""
    readable = access.readable(principal)
    wanted = [c for c in (params.classifications or readable) if c in readable]
    query = document_store.ListQuery(
        workspace_id=principal.workspace_id,
        classifications=tuple(wanted),
        page_size=1_000_000,
        status="completed",
    )
    records, _ = await services.db.run(lambda d: document_store.list_documents(d, query))
    return {
        r.id: r
        for r in records
        if (params.document_ids is None or r.id in params.document_ids)
        and all(r.metadata.get(k) == v for k, v in params.metadata.items())
    }


async def _rankings(
    services: DocumentsServices,
    principal: Principal,
    params: SearchParams,
    documents: Mapping[str, DocumentRecord],
    hits: dict[int, _Hit],
) -> None:
    """Both rankings at once: the full-text query runs in the database's thread while the
    query is embedded and the vector index is searched (fusion adds, so order is free).
    A failure of either (the embedding's 502) is raised as itself, not as a group."""
    failure: ApiError | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_text_ranking, services, principal, params, documents, hits)
            await _vector_ranking(services, principal, params, documents, hits)
    except* ApiError as group:
        failure = next(e for e in _leaves(group) if isinstance(e, ApiError))
    if failure is not None:
        raise failure


def _leaves(group: BaseExceptionGroup[ApiError]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


async def _vector_ranking(
    services: DocumentsServices,
    principal: Principal,
    params: SearchParams,
    documents: Mapping[str, DocumentRecord],
    hits: dict[int, _Hit],
) -> None:
    workspace = principal.workspace_id
    snapshot = await services.runtime.index.snapshot(
        workspace, lambda: services.db.run(lambda d: document_store.workspace_vectors(d, workspace))
    )
    wanted = snapshot.wanted(documents)
    for key, space in snapshot.spaces.items():
        if not any(wanted[c] for c in space.counts):
            continue
        model, provider = key.rsplit("@", 1)
        try:
            raw = await embed(services, principal, EmbeddingTarget(provider, model), [params.query])
        except Failed as exc:
            raise ApiError(502, "embedding_failed", str(exc), type="provider_error") from None
        import numpy as np  # with the index: the `[files]` extra's

        from gateway.kernels.vectors import index as vector_index

        query = np.frombuffer(raw[0], dtype="<f4").tolist()
        found = await trio.to_thread.run_sync(
            vector_index.nearest, space, query, wanted, CANDIDATES
        )
        for rank, (rowid, score) in enumerate(found):
            hit = hits.setdefault(rowid, _Hit(rowid))
            hit.vector = score
            hit.fused += 1.0 / (RRF_K + rank + 1)


async def _text_ranking(
    services: DocumentsServices,
    principal: Principal,
    params: SearchParams,
    documents: Mapping[str, DocumentRecord],
    hits: dict[int, _Hit],
) -> None:
    words = dict.fromkeys(w.lower() for w in _WORD.findall(params.query))
    if not words:
        return
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    workspace = principal.workspace_id
    found = await services.db.run(
        lambda d: document_store.full_text(d, workspace, match, limit=CANDIDATES * 4)
    )
    rank = 0
    for rowid, score, document_id in found:
        if document_id not in documents:  # filtered out by the request
            continue
        hit = hits.setdefault(rowid, _Hit(rowid))
        hit.bm25 = score
        hit.fused += 1.0 / (RRF_K + rank + 1)
        rank += 1
        if rank >= CANDIDATES:
            break


def _result(
    hit: _Hit, chunk: document_store.StoredChunk, documents: Mapping[str, DocumentRecord]
) -> SearchHit:
    record = documents[chunk.document_id]
    return {
        "document_id": record.id,
        "document_name": record.name,
        "data_classification": record.data_classification,
        "chunk_id": chunk.chunk_id,
        "chunk_index": chunk.chunk_index,
        "content": chunk.content,
        "page_number": chunk.page_number,
        "section_header": chunk.section_header,
        "score": round(hit.fused, 6),
        "scores": {"vector": hit.vector, "bm25": hit.bm25, "fused": round(hit.fused, 6)},
    }


async def _reranked(
    services: DocumentsServices,
    principal: Principal,
    params: SearchParams,
    results: list[SearchHit],
) -> list[SearchHit]:
    body = {
        "model": params.rerank_model,
        "query": params.query,
        "documents": [r["content"] for r in results],
        "top_n": params.top_k,
    }
    answer = await services.rerank(principal, body)
    ordered = []
    for item in answer["results"]:
        result = results[item["index"]]
        result["scores"]["rerank"] = item["relevance_score"]
        result["score"] = item["relevance_score"]
        ordered.append(result)
    return ordered
