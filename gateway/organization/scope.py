"""Which organisation records a caller may see: those wholly inside its workspaces.

A member or service account listed for some workspaces (or, with none listed, for all of
the organisation's) is visible only to a caller that reaches every one of them, so a key
of one workspace learns nothing about another workspace's people. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable


def effective(listed: Iterable[str], organization_workspaces: Iterable[str]) -> set[str]:
    """The workspaces a record covers: the listed ones, or all when none are listed."""
    listed = set(listed)
    return listed if listed else set(organization_workspaces)


def visible(
    listed: Iterable[str], reachable: Iterable[str], organization_workspaces: Iterable[str]
) -> bool:
    return effective(listed, organization_workspaces) <= set(reachable)


def reaches_all(reachable: Iterable[str], organization_workspaces: Iterable[str]) -> bool:
    """Whether a caller reaches every workspace of its organisation (sees org-wide facts)."""
    return set(organization_workspaces) <= set(reachable)
