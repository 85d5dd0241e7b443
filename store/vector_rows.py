"""Stored embeddings as read for the in-memory vector index (`gateway.retrieval`).

Both the data documents' chunks and the files' vectors are read into this one shape: the
row's key (its SQLite rowid), its owner (the document or file it is erased with), its
vector (little-endian float32 bytes) and its embedding space (vectors of different models
are not comparable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs


@attrs.frozen
class VectorRows:
    rowids: list[int]
    owners: list[str]
    vectors: list[bytes]
    spaces: list[str]

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> VectorRows:
        """From query rows of (rowid, owner, vector, space)."""
        return cls(
            [int(r[0]) for r in rows],
            [str(r[1]) for r in rows],
            [bytes(r[2]) for r in rows],
            [str(r[3]) for r in rows],
        )
