"""The vendored front-end assets are what their notes say: the version each note names is
the one the bundle declares, and every file listed has the checksum written beside it, so a
replaced or edited asset cannot keep a stale note (version, source, licence)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[2] / "gateway" / "operator"
FOLDERS = {
    # folder: (the bundle, how it declares its version)
    OPERATOR / "static" / "swagger-ui": ("swagger-ui-bundle.js", 'PACKAGE_VERSION:"{version}"'),
    OPERATOR / "console" / "vendor" / "chartjs": ("chart.umd.min.js", "Chart.js v{version}"),
}
ROW = re.compile(r"^\| `([^`]+)` \| `([0-9a-f]{64})` \|$", re.MULTILINE)


def _note(folder: Path) -> str:
    return (folder / "README.md").read_text()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_the_bundle_declares_the_version_its_note_names(folder: Path) -> None:
    version = re.search(r"^- Package: `[^`]+` (\S+),", _note(folder), re.MULTILINE)
    assert version, "the note names no version"
    bundle, declaration = FOLDERS[folder]
    assert declaration.format(version=version[1]) in (folder / bundle).read_text()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_every_vendored_file_has_its_noted_checksum(folder: Path) -> None:
    rows = dict(ROW.findall(_note(folder)))
    assert FOLDERS[folder][0] in rows
    assert any(name.startswith("LICENSE") for name in rows), "no licence text listed"
    for name, digest in rows.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_nothing_in_the_folder_is_left_out_of_its_note(folder: Path) -> None:
    """Every file is either listed with its checksum or named as ours in the note."""
    note = _note(folder)
    listed = set(dict(ROW.findall(note)))
    for path in folder.iterdir():
        if path.name != "README.md" and path.name not in listed:
            assert f"`{path.name}` is ours" in note, f"{path.name} is not accounted for"
