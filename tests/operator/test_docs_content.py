"""What the documentation pages promise about themselves: every setting is on the
operations page, the README stays a README, the pages read as pages (no raw split leftovers)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import attrs
import trio

from gateway.app.server import RunningGateway
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_setting_is_on_the_operations_page() -> None:
    page = (DOCS / "operations.md").read_text()
    missing = [
        f"GATEWAY_{field.name.upper()}"
        for field in attrs.fields(Settings)
        if f"`GATEWAY_{field.name.upper()}`" not in page
    ]
    assert missing == [], "document these settings in docs/operations.md"


def test_the_readme_is_short_and_its_commands_are_the_makefiles() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    named = set(re.findall(r"^make ([a-z-]+)", readme, re.MULTILINE))
    assert {"serve", "test"} <= named <= targets


def test_links_between_pages_land_on_a_page_and_heading() -> None:
    """A link to `page.md#anchor` must find the page and a heading with that id (as the
    served page and GitHub give it), so a tidy-up that renames a heading breaks no link."""
    from gateway.operator import pages

    names = pages.page_names(DOCS)
    broken = []
    for path in sorted(DOCS.glob("*.md")):
        for target, anchor in re.findall(
            r"\]\(([a-z0-9-]+|README)\.md(?:#([^)\s]+))?\)", path.read_text()
        ):
            if target not in names:
                broken.append(f"{path.name}: {target}.md")
            elif anchor:
                page = pages.render((DOCS / f"{target}.md").read_text(), names)
                if anchor not in page.anchors:
                    broken.append(f"{path.name}: {target}.md#{anchor}")
    assert broken == []


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_readmes_models_are_in_the_catalog() -> None:
    from providers.catalog import load_catalog

    readme = (ROOT / "README.md").read_text()
    blocks = "".join(
        _code_blocks(readme, "sh") + _code_blocks(readme, "python") + _code_blocks(readme, "js")
    )
    models = set(re.findall(r"""model["']?\s*[:=]\s*["']([\w.-]+)["']""", blocks))
    assert len(models) >= 3
    assert [m for m in sorted(models) if load_catalog().model(m) is None] == []


async def test_the_readmes_python_example_runs(gateway: RunningGateway) -> None:
    """The README's first request with the official client, as a newcomer runs it (in its
    own process), against a demo gateway: it prints the answer, its cost and its carbon."""
    example = _code_blocks((ROOT / "README.md").read_text(), "python")[0]  # the first request
    example = example.replace("http://127.0.0.1:8080", gateway.url)
    env = {**os.environ, "GATEWAY_KEY": ADMIN_KEY}
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-c", example], env=env, capture_stdout=True, capture_stderr=True
        )
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 2 and lines[0], done.stderr.decode()
    assert "'total':" in lines[1] and "'carbon_gco2e':" in lines[1]
