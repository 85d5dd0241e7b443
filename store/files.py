"""Files: the File rows, their processing status, and what processing derived from them.

A file belongs to one workspace; every read here takes the workspace, so another
workspace's id answers exactly like an unknown one. Derived rows (pages of extracted text,
chunks, vectors, PII findings) hang off the file with ON DELETE CASCADE, so deleting a file
removes everything derived from it in one statement. The bytes are in the blob store
(store/blobs.py): `delete` reports whether the blob is still named by another row, and the
caller erases it when not. Deleting goes through `store.erasure` (secure delete, the WAL
truncated, the blob shredded).

Vectors are stored as little-endian float32 blobs, the source of the in-memory vector
index the files search uses (`gateway.kernels.vectors.index`, shared with data documents;
this machine's stdlib `sqlite3` cannot load extensions such as sqlite-vec).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from store import columns, dialect
from store.handle import Handle
from store.vector_rows import VectorRows

STATUSES = ("uploaded", "processing", "processed", "error")


def new_file_id() -> str:
    return columns.new_id("file-")


@attrs.frozen(kw_only=True)
class FileRecord:
    id: str = attrs.field(factory=new_file_id)
    workspace_id: str
    key_id: str
    filename: str
    purpose: str
    kind: str
    content_type: str
    bytes: int
    sha256: str
    created_at: int
    status: str = "uploaded"
    status_details: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    options: Mapping[str, Any] = attrs.field(factory=dict)
    collection: str | None = None
    process_id: str | None = None
    started_at: int | None = None
    completed_at: int | None = None
    duration_ms: int | None = None
    stages: Mapping[str, str] = attrs.field(factory=dict)
    results: Mapping[str, Any] = attrs.field(factory=dict)
    language: str | None = None
    # An agent's upload: its processing is limited and charged to this agent and session.
    agent_id: str | None = None
    agent_session: str | None = None


@attrs.frozen
class Page:
    number: int
    text: str


@attrs.frozen(kw_only=True)
class Chunk:
    index: int
    text: str
    page: int
    start_char: int
    end_char: int
    tokens: int
    embedding_id: str | None = None


@attrs.frozen(kw_only=True)
class Finding:
    type: str
    text: str
    page: int
    start: int
    end: int
    confidence: float
    redacted: bool = True


_JSON_FIELDS = ("metadata", "options", "stages", "results")


def _to_row(record: FileRecord) -> dict[str, Any]:
    row = attrs.asdict(record, recurse=False)
    for name in _JSON_FIELDS:
        row[name] = columns.to_json(dict(row[name]))
    return row


def _from_row(row: Mapping[str, Any]) -> FileRecord:
    values = columns.without_rowid(row)
    for name in _JSON_FIELDS:
        values[name] = columns.json_object(values[name])
    return FileRecord(**values)


def workspace_bytes(db: Handle, workspace_id: str) -> int:
    row = db.execute(
        "SELECT coalesce(sum(bytes), 0) FROM files WHERE workspace_id = ?", [workspace_id]
    ).fetchone()
    return int(row[0])


class QuotaExceededError(Exception):
    """The workspace's files would take more than its storage quota."""


def insert(db: Handle, record: FileRecord, *, quota_bytes: int) -> None:
    """Store a new file row, unless the workspace's files would then exceed `quota_bytes`.

    The check and the insert share one transaction, so two concurrent uploads cannot both
    slip under the quota.
    """
    with db.atomic():
        if workspace_bytes(db, record.workspace_id) + record.bytes > quota_bytes:
            raise QuotaExceededError(record.workspace_id)
        columns.insert_row(db, "files", _to_row(record))


def get(db: Handle, workspace_id: str, file_id: str) -> FileRecord | None:
    rows = list(
        db.query("SELECT * FROM files WHERE id = ? AND workspace_id = ?", [file_id, workspace_id])
    )
    return _from_row(rows[0]) if rows else None


@attrs.frozen(kw_only=True)
class ListQuery:
    workspace_id: str
    limit: int = 20
    order: str = "desc"
    after: str | None = None
    purpose: str | None = None
    status: str | None = None
    collection: str | None = None
    metadata: Mapping[str, str] = attrs.field(factory=dict)


def list_files(db: Handle, query: ListQuery) -> tuple[list[FileRecord], bool]:
    """One page of a workspace's files and whether more follow, in upload order."""
    where = ["workspace_id = ?"]
    params: list[Any] = [query.workspace_id]
    for column in ("purpose", "status", "collection"):
        value = getattr(query, column)
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    spelling = dialect.of(db)
    for key, value in query.metadata.items():
        where.append(spelling.json_member_text("metadata") + " = ?")
        params.extend([*spelling.json_path(key), value])
    if query.after is not None:
        cursor = _place(db, query.workspace_id, query.after)
        if cursor is None:
            raise LookupError(query.after)
        comparison = "<" if query.order == "desc" else ">"
        where.append(f"(created_at, rowid) {comparison} (?, ?)")
        params.extend(cursor)
    # Within one second, the insertion order (rowid) keeps the order of uploads.
    direction = "DESC" if query.order == "desc" else "ASC"
    sql = (
        f"SELECT * FROM files WHERE {' AND '.join(where)} "
        f"ORDER BY created_at {direction}, rowid {direction} LIMIT ?"
    )
    rows = [_from_row(row) for row in db.query(sql, [*params, query.limit + 1])]
    return rows[: query.limit], len(rows) > query.limit


def _place(db: Handle, workspace_id: str, file_id: str) -> Any:
    """(created_at, rowid) of a file of the workspace, or of one deleted within the last
    day (a client deleting what it lists pages on from it); None for an unknown id."""
    for table, order in (("files", "rowid"), ("file_cursor_places", "seq")):
        row = db.execute(
            f"SELECT created_at, {order} FROM {table} WHERE id = ? AND workspace_id = ?",
            [file_id, workspace_id],
        ).fetchone()
        if row is not None:
            return row
    return None


_UPDATABLE = frozenset(attrs.fields_dict(FileRecord)) - {"id", "workspace_id", "key_id", "sha256"}


def update(db: Handle, file_id: str, **changes: Any) -> None:
    """Change some fields; a file deleted meanwhile is left alone (no error)."""
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    for name in _JSON_FIELDS:
        if name in changes:
            changes[name] = columns.to_json(dict(changes[name]))
    assignments = ", ".join(f"{name} = ?" for name in changes)
    with db.atomic():
        db.execute(f"UPDATE files SET {assignments} WHERE id = ?", [*changes.values(), file_id])


def get_any(db: Handle, file_id: str) -> FileRecord | None:
    """The file whatever its workspace: for the processing worker only, never for a caller."""
    rows = list(db.query("SELECT * FROM files WHERE id = ?", [file_id]))
    return _from_row(rows[0]) if rows else None


def unfinished(db: Handle) -> list[FileRecord]:
    """Files a stopped gateway left in the pipeline: running, or queued and never started."""
    rows = db.query(
        "SELECT * FROM files WHERE status = 'processing' "
        "OR (status = 'uploaded' AND process_id IS NOT NULL) ORDER BY created_at, id"
    )
    return [_from_row(row) for row in rows]


def delete(db: Handle, workspace_id: str, file_id: str) -> str | None:
    """Delete the file and what derives from it; the digest of its blob when no other row
    names it (the caller shreds that blob), else None. A missing file raises LookupError.
    """
    with db.atomic():
        record = get(db, workspace_id, file_id)
        if record is None:
            raise LookupError(file_id)
        _keep_place(db, workspace_id, file_id)
        db.execute("DELETE FROM files WHERE id = ?", [file_id])
        others = db.execute(
            "SELECT count(*) FROM files WHERE sha256 = ?", [record.sha256]
        ).fetchone()[0]
    return None if others else record.sha256


def remove_workspace(db: Handle, workspace_id: str) -> list[str]:
    """Delete every file of the workspace and what derives from them; the digests of the
    blobs no file names any more. Through `store.erasure`, as `delete` is."""
    digests = {
        str(row[0])
        for row in db.execute("SELECT sha256 FROM files WHERE workspace_id = ?", [workspace_id])
    }
    db.execute("DELETE FROM files WHERE workspace_id = ?", [workspace_id])
    db.execute("DELETE FROM file_cursor_places WHERE workspace_id = ?", [workspace_id])
    return sorted(d for d in digests if not blob_in_use(db, d))


PLACE_KEPT_S = 86_400


def _keep_place(db: Handle, workspace_id: str, file_id: str) -> None:
    """Remember the file's place in the list order for `after` cursors (see migration 18),
    and forget places older than `PLACE_KEPT_S`."""
    now = int(time.time())
    db.execute("DELETE FROM file_cursor_places WHERE deleted_at < ?", [now - PLACE_KEPT_S])
    db.execute(
        "INSERT INTO file_cursor_places (id, workspace_id, created_at, seq, deleted_at) "
        "SELECT id, workspace_id, created_at, rowid, ? FROM files WHERE id = ? "
        "ON CONFLICT (id) DO UPDATE SET workspace_id = excluded.workspace_id, "
        "created_at = excluded.created_at, seq = excluded.seq, deleted_at = excluded.deleted_at",
        [now, file_id],
    )


def blob_in_use(db: Handle, sha256: str) -> bool:
    row = db.execute("SELECT 1 FROM files WHERE sha256 = ? LIMIT 1", [sha256]).fetchone()
    return row is not None


def blob_digests(db: Handle) -> set[str]:
    """Every blob digest some file row names (the start-up sweep keeps exactly these)."""
    return {row[0] for row in db.execute("SELECT DISTINCT sha256 FROM files").fetchall()}


def replace_derived(
    db: Handle,
    file_id: str,
    pages: Sequence[Page],
    chunks: Sequence[Chunk],
    findings: Sequence[Finding],
) -> None:
    """Store what one processing run derived, replacing an earlier run's (a resumed file)."""
    with db.atomic():
        for table in ("file_pages", "file_chunks", "file_pii", "file_vectors"):
            db.execute(f"DELETE FROM {table} WHERE file_id = ?", [file_id])
        columns.insert_many(
            db,
            "file_pages",
            ({"file_id": file_id, "number": p.number, "text": p.text} for p in pages),
        )
        columns.insert_many(
            db,
            "file_chunks",
            (
                {"file_id": file_id, "idx": c.index, **attrs.asdict(c, filter=_not_index)}
                for c in chunks
            ),
        )
        columns.insert_many(
            db,
            "file_pii",
            ({"file_id": file_id, "idx": i, **attrs.asdict(f)} for i, f in enumerate(findings)),
        )


def _not_index(attribute: attrs.Attribute[Any], _: object) -> bool:
    return attribute.name != "index"


def store_vectors(
    db: Handle,
    file_id: str,
    *,
    collection: str | None,
    model: str,
    vectors: Iterable[tuple[int, Sequence[float]]],
) -> int:
    """Store one vector per chunk index and point the chunk at it; returns how many."""
    count = 0
    with db.atomic():
        for chunk_idx, vector in vectors:
            vector_id = columns.new_id("emb-")
            columns.insert_row(
                db,
                "file_vectors",
                {
                    "id": vector_id,
                    "file_id": file_id,
                    "chunk_idx": chunk_idx,
                    "collection": collection,
                    "model": model,
                    "dimensions": len(vector),
                    "vector": array("f", vector).tobytes(),
                },
            )
            db.execute(
                "UPDATE file_chunks SET embedding_id = ? WHERE file_id = ? AND idx = ?",
                [vector_id, file_id, chunk_idx],
            )
            count += 1
    return count


def pages(db: Handle, file_id: str) -> list[Page]:
    rows = db.query(
        "SELECT number, text FROM file_pages WHERE file_id = ? ORDER BY number", [file_id]
    )
    return [Page(int(r["number"]), r["text"]) for r in rows]


def chunks(db: Handle, file_id: str, *, limit: int, offset: int) -> tuple[list[Chunk], int]:
    total = db.execute("SELECT count(*) FROM file_chunks WHERE file_id = ?", [file_id]).fetchone()
    rows = db.query(
        "SELECT * FROM file_chunks WHERE file_id = ? ORDER BY idx LIMIT ? OFFSET ?",
        [file_id, limit, offset],
    )
    found = [
        Chunk(
            index=int(r["idx"]),
            text=r["text"],
            page=int(r["page"]),
            start_char=int(r["start_char"]),
            end_char=int(r["end_char"]),
            tokens=int(r["tokens"]),
            embedding_id=r["embedding_id"],
        )
        for r in rows
    ]
    return found, int(total[0])


def vectors(db: Handle, file_id: str) -> list[tuple[int, list[float]]]:
    rows = db.query(
        "SELECT chunk_idx, vector FROM file_vectors WHERE file_id = ? ORDER BY chunk_idx",
        [file_id],
    )
    return [(int(r["chunk_idx"]), array("f", r["vector"]).tolist()) for r in rows]


def findings(db: Handle, file_id: str) -> list[Finding]:
    rows = db.query("SELECT * FROM file_pii WHERE file_id = ? ORDER BY idx", [file_id])
    return [
        Finding(
            type=r["type"],
            text=r["text"],
            page=int(r["page"]),
            start=int(r["start"]),
            end=int(r["end"]),
            confidence=float(r["confidence"]),
            redacted=bool(r["redacted"]),
        )
        for r in rows
    ]


def workspace_vectors(db: Handle, workspace_id: str, file_id: str | None = None) -> VectorRows:
    """The vectors of the workspace's processed files (or of one of them), keyed by the
    vector row's rowid, one embedding space per model."""
    one = "" if file_id is None else " AND v.file_id = ?"
    rows = db.execute(
        "SELECT v.rowid, v.file_id, v.vector, v.model FROM file_vectors v "
        "JOIN files f ON f.id = v.file_id WHERE f.workspace_id = ? AND f.status = 'processed'"
        f"{one} ORDER BY v.rowid",
        [workspace_id] if file_id is None else [workspace_id, file_id],
    ).fetchall()
    return VectorRows.of(rows)


@attrs.frozen(kw_only=True)
class SearchableFile:
    id: str
    filename: str
    collection: str | None


def searchable(
    db: Handle,
    workspace_id: str,
    *,
    collection: str | None,
    file_ids: Sequence[str] | None,
) -> list[SearchableFile]:
    """The workspace's processed files that have vectors, within a collection and/or among
    some ids when asked."""
    where = ["workspace_id = ?", "status = 'processed'"]
    params: list[Any] = [workspace_id]
    if collection is not None:
        where.append("collection = ?")
        params.append(collection)
    if file_ids is not None:
        where.append(dialect.of(db).in_list("id"))
        params.append(dialect.of(db).list_param(file_ids))
    rows = db.execute(
        f"SELECT id, filename, collection FROM files WHERE {' AND '.join(where)} "
        "AND EXISTS (SELECT 1 FROM file_vectors v WHERE v.file_id = files.id)",
        params,
    ).fetchall()
    return [SearchableFile(id=r[0], filename=r[1], collection=r[2]) for r in rows]


@attrs.frozen(kw_only=True)
class VectorChunk:
    file_id: str
    chunk: Chunk


def chunks_by_vector(db: Handle, rowids: Sequence[int]) -> dict[int, VectorChunk]:
    """The chunk each vector row (by rowid) embeds."""
    rows = db.execute(
        "SELECT v.rowid, c.file_id, c.idx, c.text, c.page, c.start_char, c.end_char, c.tokens, "
        "c.embedding_id FROM file_vectors v JOIN file_chunks c "
        "ON c.file_id = v.file_id AND c.idx = v.chunk_idx "
        f"WHERE {dialect.of(db).in_list('v.rowid')}",
        [dialect.of(db).list_param(rowids)],
    ).fetchall()
    return {
        int(r[0]): VectorChunk(
            file_id=r[1],
            chunk=Chunk(
                index=int(r[2]),
                text=r[3],
                page=int(r[4]),
                start_char=int(r[5]),
                end_char=int(r[6]),
                tokens=int(r[7]),
                embedding_id=r[8],
            ),
        )
        for r in rows
    }
