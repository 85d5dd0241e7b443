"""POST /v1/files/search (beyond the spec): nearest chunks of the workspace's vectorized files.

The files' vectors (`vectorize` at upload) are searched through the same in-memory vector
index as the data documents (`gateway.kernels.vectors.index`): one index per workspace,
one space per embedding model. The query is embedded through the gateway's embeddings
service (limits, usage and cost apply) with each model that embedded a wanted file, and the
hits of all spaces are ordered by cosine similarity. Only processed files of the caller's
workspace are searched, narrowed by `collection` and `file_ids`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

import attrs
import trio

from gateway.files.services import FilesServices
from gateway.kernels.vectors.search_body import Query, TopK
from gateway.platform.auth import Principal
from gateway.platform.shapes import Doc, Length, parse
from store import files as file_store

Named = Annotated[str, Length(least=1)]


@attrs.frozen(kw_only=True)
class FileSearch:
    """A search of the workspace's vectorized files; `collection` and `file_ids` narrow
    the files searched, `embedding_model` the vector spaces."""

    query: Query
    top_k: TopK = 5
    collection: Named | None = None
    file_ids: Annotated[tuple[str, ...] | None, Doc("File ids to search within")] = None
    embedding_model: Named | None = None


class FileHit(TypedDict):
    """A chunk of a file near the query (`score`: cosine similarity)."""

    file_id: str
    filename: str
    collection: str | None
    chunk_index: int
    text: str
    page: int
    start_char: int
    end_char: int
    score: float
    embedding_model: str


class FileHits(TypedDict):
    """The nearest chunks, best first."""

    object: Literal["list"]
    query: str
    data: list[FileHit]


def search_body(body: Mapping[str, Any]) -> FileSearch:
    """Pure: the request body, validated."""
    return parse(FileSearch, body)


async def search(
    services: FilesServices, principal: Principal, body: Mapping[str, Any]
) -> FileHits:
    principal.require("files")
    params = search_body(body)
    workspace = principal.workspace_id
    files = await services.db.run(
        lambda d: file_store.searchable(
            d, workspace, collection=params.collection, file_ids=params.file_ids
        )
    )
    by_id = {f.id: f for f in files}
    snapshot = await services.runtime.index.snapshot(
        workspace, lambda: services.db.run(lambda d: file_store.workspace_vectors(d, workspace))
    )
    wanted = snapshot.wanted(by_id)
    found: list[tuple[float, int, str]] = []
    for model, space in snapshot.spaces.items():
        if params.embedding_model not in (None, model):
            continue
        if not any(wanted[c] for c in space.counts):
            continue
        query = await _embedded(services, principal, model, params.query)
        from gateway.kernels.vectors import index as vector_index  # numpy: the `[files]` extra's

        near = await trio.to_thread.run_sync(
            vector_index.nearest, space, query, wanted, params.top_k
        )
        found.extend((score, rowid, model) for rowid, score in near)
    found.sort(key=lambda f: (-f[0], f[1]))
    chosen = found[: params.top_k]
    chunks = await services.db.run(
        lambda d: file_store.chunks_by_vector(d, [rowid for _, rowid, _ in chosen])
    )
    data = [
        _hit(score, model, chunks[rowid], by_id)
        for score, rowid, model in chosen
        if rowid in chunks and chunks[rowid].file_id in by_id
    ]
    return {"object": "list", "query": params.query, "data": data}


async def _embedded(
    services: FilesServices, principal: Principal, model: str, text: str
) -> list[float]:
    """The query's vector by `model`, through the embeddings service in the caller's name
    (its errors, such as a limit's 429, are the answer's)."""
    answer = await services.capabilities.embed(principal, {"model": model, "input": [text]})
    return [float(x) for x in answer["data"][0]["embedding"]]


def _hit(
    score: float,
    model: str,
    found: file_store.VectorChunk,
    files: Mapping[str, file_store.SearchableFile],
) -> FileHit:
    record = files[found.file_id]
    chunk = found.chunk
    return {
        "file_id": record.id,
        "filename": record.filename,
        "collection": record.collection,
        "chunk_index": chunk.index,
        "text": chunk.text,
        "page": chunk.page,
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "score": round(score, 6),
        "embedding_model": model,
    }
