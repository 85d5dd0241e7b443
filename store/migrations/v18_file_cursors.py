"""Migration 18: where a deleted file stood in its workspace's list, for `after` cursors."""

SCRIPT = """
-- GET /v1/files?after=<id> pages from a file's place in upload order (created_at, rowid).
-- A client that deletes the files it lists (the official client's auto-pagination with a
-- delete per file) asks for the page after a file it has just deleted: the row is gone, so
-- its place is kept here, a small row per deleted file, pruned a day after the deletion.
CREATE TABLE file_cursor_places (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    deleted_at INTEGER NOT NULL
);
CREATE INDEX file_cursor_places_by_deletion ON file_cursor_places (deleted_at);
"""
