"""Writing an export file section by section, a page of rows at a time (synchronous; the
worker calls it off the event loop).

Sections: `usage` (every request), `errors` (the failed ones) and `costs` (per day,
provider and model). JSON is one object with an array per section; CSV and Parquet are one
table whose `section` column says which section a row belongs to, with the columns of
every section (empty where a section has no such column). Parquet goes through pyarrow
(`export_parquet`), imported by the first Parquet export only: the library and its
shared objects are ~36 MiB of resident memory a gateway that never writes Parquet does
not need to hold.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal, Protocol

Row = Mapping[str, Any]

Kind = Literal["string", "int64", "float64", "bool"]
COLUMNS: tuple[tuple[str, Kind], ...] = (
    ("section", "string"),
    ("date", "string"),
    ("created_at", "string"),
    ("request_id", "string"),
    ("key_id", "string"),
    ("model", "string"),
    ("provider", "string"),
    ("endpoint", "string"),
    ("status", "int64"),
    ("error_code", "string"),
    ("error_type", "string"),
    ("requests", "int64"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("cost_usd", "float64"),
    ("cache_savings_usd", "float64"),
    ("latency_ms", "float64"),
    ("cache_hit", "bool"),
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


def open_sink(fmt: str, path: Path, header: Mapping[str, Any]) -> Sink:
    if fmt == "csv":
        return CsvSink(path)
    if fmt == "json":
        return JsonSink(path, header)
    # Imported here: pyarrow only in a process that writes Parquet (module docstring).
    from gateway.analytics.export_parquet import ParquetSink

    return ParquetSink(path)
