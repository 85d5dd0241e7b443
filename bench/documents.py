"""`python -m bench.documents [--quick]`: data-document ingestion and search latency.

1. Search: `--chunks` chunks (default 100,000) of `--dims` components (default 1,024, the
   width of mistral-embed, the EU default) in one workspace of a fresh store on disk, text
   from a 20,000-word vocabulary. Each query runs the search path of POST /v1/data/search
   after the query's embedding: the cosine ranking over the workspace's in-memory vector
   index (`gateway.kernels.vectors.index`, clustered above 20,000 rows, with the
   document mask), the FTS5 BM25 ranking, and reading the chosen chunks. The embedding call
   itself is the provider's latency and is left out. Reports p50/p99 over `--queries`
   queries and the index load time (first search after a start). Target: p50 < 20 ms.
2. Ingestion: a gateway in this process (demo mode, simulated providers) ingests a
   generated `--pages`-page PDF: pypdf extraction, semantic chunking with the real
   tokenizer, embedding through the engine (simulated mistral-embed), FTS5 indexing.
   Reports pages per second from upload to `completed`.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import trio

from gateway.kernels.vectors import index as vector_index
from gateway.kernels.vectors.cache import Snapshot, with_rows
from store import documents as document_store
from store.db import open_database
from store.documents import DocumentRecord, StoredChunk

WORDS = [f"w{i:05d}" for i in range(20_000)]
DOCUMENT_CHUNKS = 100


def _record(i: int) -> DocumentRecord:
    now = document_store.now_iso()
    return DocumentRecord(
        organization_id="default",
        workspace_id="default",
        key_id="bench",
        name=f"doc{i}",
        original_filename=f"doc{i}.txt",
        mime_type="text/plain",
        kind="txt",
        file_size_bytes=1,
        sha256="0" * 64,
        data_classification="internal",
        chunking_strategy="semantic",
        chunk_size_tokens=512,
        chunk_overlap_tokens=50,
        residency_region="eu",
        retention_days=None,
        expires_at=None,
        status="completed",
        embedding_model="mistral-embed",
        embedding_provider="mistral",
        created_at=now,
        updated_at=now,
    )


def fill(data_dir: Path, chunks: int, dims: int) -> list[str]:
    """A store holding `chunks` chunks; the document ids."""
    db = open_database(data_dir)
    rng = np.random.default_rng(7)
    pick = random.Random(7)
    ids = []
    for i in range(chunks // DOCUMENT_CHUNKS):
        record = _record(i)
        ids.append(record.id)
        matrix = rng.standard_normal((DOCUMENT_CHUNKS, dims)).astype("<f4")
        stored = [
            StoredChunk(
                chunk_index=n,
                content=" ".join(pick.choices(WORDS, k=60)),
                token_count=120,
                page_number=1,
                section_header=None,
                start_char=0,
                end_char=1,
                vector=matrix[n].tobytes(),
            )
            for n in range(DOCUMENT_CHUNKS)
        ]
        db.run_sync(lambda d, r=record: document_store.insert(d, r))  # type: ignore[misc]
        db.run_sync(
            lambda d, r=record, s=stored: document_store.store_chunks(  # type: ignore[misc]
                d, r.id, s, status="completed"
            )
        )
    db.close()
    return ids


def search_latency(data_dir: Path, ids: list[str], queries: int, dims: int) -> dict[str, float]:
    db = open_database(data_dir)
    started = time.perf_counter()
    rows = db.run_sync(lambda d: document_store.workspace_vectors(d, "default"))
    read_s = time.perf_counter() - started
    snapshot = with_rows(Snapshot(), rows)
    build_s = time.perf_counter() - started
    del rows
    space = next(iter(snapshot.spaces.values()))
    rng = np.random.default_rng(11)
    pick = random.Random(11)
    timings, vector_ms, text_ms = [], [], []
    for _ in range(queries):
        query = rng.standard_normal(dims).astype(np.float32).tolist()
        words = pick.choices(WORDS, k=4)
        match = " OR ".join(f'"{w}"' for w in words)
        t0 = time.perf_counter()
        wanted = snapshot.wanted(ids)
        near = vector_index.nearest(space, query, wanted, 100)
        t1 = time.perf_counter()
        text = db.run_sync(lambda d, m=match: document_store.full_text(d, "default", m, limit=400))  # type: ignore[misc]
        t2 = time.perf_counter()
        chosen = [rowid for rowid, _ in near[:5]] + [rowid for rowid, _, _ in text[:5]]
        db.run_sync(lambda d, c=chosen: document_store.chunks_by_rowid(d, c))  # type: ignore[misc]
        timings.append((time.perf_counter() - t0) * 1000)
        vector_ms.append((t1 - t0) * 1000)
        text_ms.append((t2 - t1) * 1000)
    db.close()
    timings.sort()
    return {
        "p50_ms": statistics.median(timings),
        "p99_ms": timings[int(len(timings) * 0.99) - 1],
        "cache_build_s": build_s,
        "cache_read_s": read_s,
        "vector_p50_ms": statistics.median(vector_ms),
        "bm25_p50_ms": statistics.median(text_ms),
    }


async def ingestion(pages: int) -> float:
    """Pages per second of one PDF from upload to `completed`, in an in-process gateway."""
    import httpx
    from fpdf import FPDF

    from gateway.app.server import run_gateway
    from gateway.platform.config import Settings

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pick = random.Random(3)
    for n in range(pages):
        pdf.add_page()
        pdf.multi_cell(
            0,
            6,
            f"Section {n}\n\n"
            + ". ".join(
                " ".join(pick.choices(["alpha", "beta", "gamma", "delta", "data", "report"], k=12))
                for _ in range(30)
            )
            + ".",
        )
    data = bytes(pdf.output())
    key = "gw_admin_bench_documents_0123456789"
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            port=0,
            data_dir=Path(tmp),
            demo=True,
            admin_key=key,
            sim_ttft_ms=0,
            sim_tokens_per_second=0,
        )
        async with trio.open_nursery() as nursery:
            running = await nursery.start(partial(run_gateway, settings, env={}))
            async with httpx.AsyncClient(
                base_url=running.url, headers={"authorization": f"Bearer {key}"}, timeout=120
            ) as http:
                t0 = time.perf_counter()
                made = (
                    await http.post("/v1/data/documents", files={"file": ("bench.pdf", data)})
                ).json()
                while True:
                    body = (await http.get(f"/v1/data/documents/{made['id']}")).json()
                    if body["status"] in ("completed", "failed"):
                        break
                    await trio.sleep(0.02)
                elapsed = time.perf_counter() - t0
            nursery.cancel_scope.cancel()
    assert body["status"] == "completed", body
    return pages / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks, 10 pages")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.pages, args.queries = 10_000, 10, 100
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ids = fill(Path(tmp), args.chunks, args.dims)
        print(
            f"store of {args.chunks} chunks x {args.dims} dims in {time.perf_counter() - t0:.1f} s"
        )
        result = search_latency(Path(tmp), ids, args.queries, args.dims)
    print(
        f"search over {args.chunks} chunks: p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms (vectors p50 {result['vector_p50_ms']:.1f} ms, "
        f"BM25 p50 {result['bm25_p50_ms']:.1f} ms; index load {result['cache_build_s']:.2f} s, of "
        f"which reading SQLite {result['cache_read_s']:.2f} s; load average "
        f"{os.getloadavg()[0]:.1f})"
    )
    rate = trio.run(ingestion, args.pages)
    print(f"ingestion: {rate:.1f} pages/s ({args.pages}-page PDF, upload to completed)")


if __name__ == "__main__":
    main()
