"""The Parquet sink: pages gathered into row groups of `ROW_GROUP_ROWS`, every row kept in
order, readable by pyarrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gateway.analytics import export_parquet
from gateway.analytics.export_file import NAMES, open_sink


def test_pages_become_row_groups_of_the_configured_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_parquet, "ROW_GROUP_ROWS", 1000)
    path = tmp_path / "e.parquet"
    sink = open_sink("parquet", path, {})
    sink.section("usage")
    for page in range(5):
        sink.write([{"request_id": f"r{page}_{n}", "status": 200} for n in range(600)])
    sink.section("costs")
    sink.write([{"model": "m", "cost_usd": 0.5}])
    sink.close()
    parquet = pq.ParquetFile(path)
    sizes = [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)]
    assert sizes == [1200, 1200, 601]
    table = parquet.read()
    assert table.column_names == list(NAMES)
    ids = table.column("request_id").to_pylist()
    assert ids[:3] == ["r0_0", "r0_1", "r0_2"] and ids[2999] == "r4_599" and ids[3000] is None
    assert table.column("section").to_pylist()[-2:] == ["usage", "costs"]
