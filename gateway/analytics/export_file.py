"""Writing an export file section by section, a page of rows at a time (synchronous; the
worker calls it off the event loop).

Sections: `usage` (every request), `errors` (the failed ones) and `costs` (per day,
provider and model). JSON is one object with an array per section; CSV and Parquet are one
table whose `section` column says which section a row belongs to, with the columns of
every section (empty where a section has no such column). Parquet goes through pyarrow,
one row group per page, so memory holds one page whatever the file's size.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

Row = Mapping[str, Any]

COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("section", pa.string()),
    ("date", pa.string()),
    ("created_at", pa.string()),
    ("request_id", pa.string()),
    ("key_id", pa.string()),
    ("model", pa.string()),
    ("provider", pa.string()),
    ("endpoint", pa.string()),
    ("status", pa.int64()),
    ("error_code", pa.string()),
    ("error_type", pa.string()),
    ("requests", pa.int64()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("cache_savings_usd", pa.float64()),
    ("latency_ms", pa.float64()),
    ("cache_hit", pa.bool_()),
)
NAMES = tuple(name for name, _ in COLUMNS)
CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


class Sink(Protocol):
    def section(self, name: str) -> None: ...
    def write(self, rows: Sequence[Row]) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class CsvSink:
    def __init__(self, path: Path) -> None:
        self._file: IO[str] = path.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(NAMES)
        self._section = ""

    def section(self, name: str) -> None:
        self._section = name

    def write(self, rows: Sequence[Row]) -> None:
        rest = NAMES[1:]
        self._writer.writerows([self._section, *(row.get(n) for n in rest)] for row in rows)

    def close(self) -> None:
        self._file.close()

    def abort(self) -> None:
        self._file.close()


class JsonSink:
    """`{"export_id": ..., "period": ..., "<section>": [rows...], ...}`, streamed."""

    def __init__(self, path: Path, header: Mapping[str, Any]) -> None:
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self._file.write(json.dumps(dict(header))[:-1])
        self._first_row = True
        self._open = False

    def section(self, name: str) -> None:
        self._end_section()
        self._file.write(f", {json.dumps(name)}: [")
        self._open, self._first_row = True, True

    def write(self, rows: Sequence[Row]) -> None:
        for row in rows:
            self._file.write(("" if self._first_row else ",") + "\n" + json.dumps(dict(row)))
            self._first_row = False

    def _end_section(self) -> None:
        if self._open:
            self._file.write("\n]")
            self._open = False

    def close(self) -> None:
        self._end_section()
        self._file.write("}\n")
        self._file.close()

    def abort(self) -> None:
        self._file.close()


class ParquetSink:
    SCHEMA = pa.schema(list(COLUMNS))

    def __init__(self, path: Path) -> None:
        self._writer = pq.ParquetWriter(str(path), self.SCHEMA, compression="zstd")
        self._section = ""

    def section(self, name: str) -> None:
        self._section = name

    def write(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        data = {name: [row.get(name) for row in rows] for name in NAMES}
        data["section"] = [self._section] * len(rows)
        self._writer.write_table(pa.Table.from_pydict(data, schema=self.SCHEMA))

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        self._writer.close()


def open_sink(fmt: str, path: Path, header: Mapping[str, Any]) -> Sink:
    if fmt == "csv":
        return CsvSink(path)
    if fmt == "json":
        return JsonSink(path, header)
    return ParquetSink(path)
