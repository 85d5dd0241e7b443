"""`columns.insert_row`: a record's converted columns written by name, in one
transaction, and read back as written."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from store import columns


def test_a_row_goes_in_by_column_name_whatever_the_key_order() -> None:
    db = sqlite_utils.Database(memory=True)
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, note TEXT)")
    columns.insert_row(db, "t", {"note": None, "n": 3, "id": "a"})
    assert list(db.query("SELECT * FROM t")) == [{"id": "a", "n": 3, "note": None}]
    with pytest.raises(sqlite3.IntegrityError):
        columns.insert_row(db, "t", {"id": "a", "n": 4, "note": "again"})
    assert list(db.query("SELECT n FROM t")) == [{"n": 3}]
