"""Stored embeddings as read for the in-memory vector index (`gateway.retrieval`).

Both the data documents' chunks and the files' vectors are read into this one shape: the
row's key (its SQLite rowid), its owner (the document or file it is erased with), its
vector (little-endian float32 bytes) and its embedding space (vectors of different models
are not comparable).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class VectorRows:
    rowids: list[int]
    owners: list[str]
    vectors: list[bytes]
    spaces: list[str]
