"""The extras' table (`gateway.platform.extras`), by which the gateway decides what to mount,
says what pyproject.toml installs: each extra's modules are exactly the top-level modules
of the packages its list names, `[all]` is every extra and `[dev]` has `[all]`, and the
core's list holds none of the extras' packages."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from collections import defaultdict
from pathlib import Path

from gateway.platform.extras import EXTRAS

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
OPTIONAL: dict[str, list[str]] = PROJECT["optional-dependencies"]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group()).lower()


def _modules_by_distribution() -> dict[str, set[str]]:
    """The public top-level modules each installed distribution provides."""
    provided: dict[str, set[str]] = defaultdict(set)
    for module, distributions in importlib.metadata.packages_distributions().items():
        if not module.startswith("_"):
            for distribution in distributions:
                provided[_name(distribution)].add(module)
    return provided


def test_each_extras_modules_are_those_of_its_packages() -> None:
    provided = _modules_by_distribution()
    for extra in EXTRAS:
        listed = [_name(requirement) for requirement in OPTIONAL[extra.name]]
        modules = set().union(*(provided[distribution] for distribution in listed))
        assert set(extra.modules) == modules, extra.name


def test_all_is_every_extra_and_dev_installs_all() -> None:
    assert OPTIONAL["all"] == [f"ai-gateway[{','.join(extra.name for extra in EXTRAS)}]"]
    assert "ai-gateway[all]" in OPTIONAL["dev"]


def test_the_core_lists_no_package_of_an_extra() -> None:
    core = {_name(requirement) for requirement in PROJECT["dependencies"]}
    for extra in EXTRAS:
        assert not core & {_name(requirement) for requirement in OPTIONAL[extra.name]}
