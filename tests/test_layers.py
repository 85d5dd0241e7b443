"""The layers of `gateway/` hold: read the import graph (ast, nothing is run) and fail on
an import that points the wrong way or on a cycle between packages.

The allowed graph is drawn in docs/architecture.md ("Inside gateway/"): the composition
root (`app`) may import anything; a family imports the core (`platform`, `upstream`) and
the shared kernels, never another family; the core imports no family.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent.parent / "gateway"
ROOT = frozenset({"app", "__main__"})
CORE = frozenset({"platform", "upstream"})
ALLOWED: dict[str, frozenset[str]] = {
    "platform": frozenset(),
    "upstream": frozenset({"platform"}),
    "kernels": frozenset({"platform", "upstream"}),
    "workers": frozenset({"platform", "upstream", "kernels"}),
}
FAMILY_MAY_IMPORT = frozenset({"platform", "upstream", "kernels"})


def package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "gateway" or len(parts) < 2:
        return None
    return parts[1]


def imports(path: Path) -> Iterator[str]:
    """The absolute names of the modules `path` imports (relative imports resolved)."""
    rel = path.relative_to(GATEWAY.parent).with_suffix("")
    package = list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                yield ".".join(anchor + ([node.module] if node.module else []))
            elif node.module:
                yield node.module


def graph() -> dict[str, set[str]]:
    """Package -> the packages it imports (within `gateway/`)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in GATEWAY.rglob("*.py"):
        parts = path.relative_to(GATEWAY).with_suffix("").parts
        source = parts[0]  # a subpackage, or a module of `gateway/` itself (`__main__`)
        if source == "__init__":
            continue
        for module in imports(path):
            target = package_of(module)
            if target is not None and target != source:
                edges[source].add(target)
    return edges


def may_import(source: str, target: str) -> bool:
    if source in ROOT:
        return True
    if source in ALLOWED:
        return target in ALLOWED[source]
    return target in FAMILY_MAY_IMPORT  # a family


def forbidden(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(s, t) for s, targets in edges.items() for t in targets if not may_import(s, t)}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_points_the_wrong_way() -> None:
    wrong = forbidden(graph())
    assert not wrong, "imports that break the layers: " + ", ".join(
        f"{s} -> {t}" for s, t in sorted(wrong)
    )


def test_no_cycle_between_packages() -> None:
    assert cycles(graph()) == []


def test_the_checks_catch_a_family_importing_a_family_and_a_cycle() -> None:
    edges = {"chat": {"upstream", "audio"}, "audio": {"chat"}, "upstream": {"platform"}}
    assert forbidden(edges) == {("chat", "audio"), ("audio", "chat")}
    assert cycles(edges) == [["audio", "chat"]]
    assert forbidden({"platform": {"chat"}, "app": {"chat", "audio"}}) == {("platform", "chat")}
