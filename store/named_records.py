"""A workspace's named records: one table per kind, the same columns and the same CRUD.

Pipeline templates and voice mappings (and whatever else a workspace names) are rows of
`id`, `workspace_id`, `name` (UNIQUE within the workspace, an index of the kind's
migration), `description`, some JSON-object columns, `created_at` and `updated_at`.
A `NamedTable` holds what differs (the table, its JSON columns, the record class) and
does the rest once: rows to records and back, insert and replace (raising
`NameTakenError` inside the writing transaction, so the gateway answers 409), get by id
and by name, list and delete, always within one workspace (another workspace's record
is None, as an unknown one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from store import columns
from store.errors import integrity_errors, is_unique_violation
from store.handle import Handle

R = TypeVar("R")
_DATES = ("created_at", "updated_at")
_FIXED = ("id", "workspace_id", "created_at")  # never changed by `replace`


class NameTakenError(Exception):
    """Another record of the workspace already has this name."""


@attrs.frozen
class NamedTable(Generic[R]):
    """The CRUD of one kind of named record (see the module docstring). `record` is an
    attrs class whose fields are the table's columns."""

    table: str
    record: Callable[..., R]
    json_columns: tuple[str, ...]

    def to_row(self, record: R) -> dict[str, Any]:
        row = attrs.asdict(record, recurse=False)  # type: ignore[arg-type]
        for name in self.json_columns:
            row[name] = columns.to_json(row[name])
        for name in _DATES:
            row[name] = columns.to_iso(row[name])
        return row

    def from_row(self, row: Mapping[str, Any]) -> R:
        fields = dict(row)
        for name in self.json_columns:
            fields[name] = columns.json_object(fields[name])
        for name in _DATES:
            fields[name] = columns.from_iso(fields[name])
        return self.record(**fields)

    def insert(self, db: Handle, record: R) -> None:
        row = self.to_row(record)
        try:
            with db.atomic():
                columns.insert_row(db, self.table, row)
        except integrity_errors() as exc:
            raise _name_taken(exc, row["name"]) from exc

    def replace(self, db: Handle, record: R) -> None:
        """Store a changed record (same id and workspace): every column but the fixed."""
        row = self.to_row(record)
        changed = [name for name in row if name not in _FIXED]
        assignments = ", ".join(f"{name} = ?" for name in changed)
        try:
            with db.atomic():
                db.execute(
                    f"UPDATE {self.table} SET {assignments} WHERE id = ? AND workspace_id = ?",
                    [*(row[name] for name in changed), row["id"], row["workspace_id"]],
                )
        except integrity_errors() as exc:
            raise _name_taken(exc, row["name"]) from exc

    def get(self, db: Handle, workspace_id: str, record_id: str) -> R | None:
        return self._one(db, "id = ?", [workspace_id, record_id])

    def by_name(self, db: Handle, workspace_id: str, name: str) -> R | None:
        return self._one(db, "name = ?", [workspace_id, name])

    def by_id_or_name(self, db: Handle, workspace_id: str, key: str) -> R | None:
        """The record whose id is `key`, else the one so named (one query)."""
        where = "(id = ? OR name = ?) ORDER BY id = ? DESC LIMIT 1"
        return self._one(db, where, [workspace_id, key, key, key])

    def list_for_workspace(self, db: Handle, workspace_id: str) -> list[R]:
        rows = db.query(
            f"SELECT * FROM {self.table} WHERE workspace_id = ? ORDER BY created_at, id",
            [workspace_id],
        )
        return [self.from_row(row) for row in rows]

    def delete(self, db: Handle, workspace_id: str, record_id: str) -> bool:
        with db.atomic():
            cursor = db.execute(
                f"DELETE FROM {self.table} WHERE id = ? AND workspace_id = ?",
                [record_id, workspace_id],
            )
        return cursor.rowcount > 0

    def _one(self, db: Handle, where: str, params: list[str]) -> R | None:
        rows = list(
            db.query(f"SELECT * FROM {self.table} WHERE workspace_id = ? AND {where}", params)
        )
        return self.from_row(rows[0]) if rows else None


def _name_taken(error: Exception, name: str) -> Exception:
    """The name's UNIQUE index refused the row; any other refusal (a workspace that
    does not exist) is not the client's name clash but the error itself."""
    return NameTakenError(name) if is_unique_violation(error) else error
