"""The request log's management API: list a workspace's model calls, read one request
with its attempts (and its bodies, where the workspace keeps them)."""
