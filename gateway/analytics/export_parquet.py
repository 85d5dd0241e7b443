"""The Parquet sink of an export (pyarrow), in its own module so that only a Parquet
export imports pyarrow (`export_file.open_sink`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gateway.analytics.export_file import COLUMNS, NAMES, Row

ROW_GROUP_ROWS = 20_000
"""Rows per Parquet row group: pages are converted to Arrow batches as they come (the
Python rows released at once) and written together as one row group of this size, large
enough for readers to scan efficiently, small enough that its Arrow buffers stay a few
MiB."""


class ParquetSink:
    SCHEMA = pa.schema(
        [(name, getattr(pa, kind if kind != "bool" else "bool_")()) for name, kind in COLUMNS]
    )

    def __init__(self, path: Path) -> None:
        self._writer = pq.ParquetWriter(str(path), self.SCHEMA, compression="zstd")
        self._section = ""
        self._batches: list[pa.RecordBatch] = []
        self._buffered = 0

    def section(self, name: str) -> None:
        self._section = name

    def write(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        data = {name: [row.get(name) for row in rows] for name in NAMES}
        data["section"] = [self._section] * len(rows)
        self._batches.append(pa.RecordBatch.from_pydict(data, schema=self.SCHEMA))
        self._buffered += len(rows)
        if self._buffered >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._batches:
            table = pa.Table.from_batches(self._batches, schema=self.SCHEMA)
            self._writer.write_table(table, row_group_size=self._buffered)
        self._batches, self._buffered = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()

    def abort(self) -> None:
        self._writer.close()
