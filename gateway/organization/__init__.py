"""Organisations, workspaces, members and roles, service accounts, user access tokens."""
