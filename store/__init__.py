"""The store: the schema, one module per aggregate, every SQL statement.

Importing this package arranges for sqlite-utils, whenever it is first imported, to be
imported with numpy and pandas hidden from it. sqlite-utils imports both at its own import
whenever they are installed, only to map their scalar types to column types
(`COLUMN_TYPE_MAPPING`), which the store never uses: its tables come from the migrations'
SQL and its values are Python's own. With the `[audio]` or `[files]` extras installed
numpy is present, and that import alone would cost the gateway ~20 MiB of resident memory
and ~0.2 s of start-up for nothing (docs/operations.md, "Install size and memory").

The arrangement is an import hook that waits for sqlite-utils (`_SqliteUtilsFinder`), so
a process that never uses sqlite-utils (the usage writer's child on PostgreSQL) does not
load it either. It hides only packages not imported yet, only while sqlite-utils' own
modules run, and removes itself once used. Its finder and loader are plain classes, not
`importlib.abc`'s: that module imports importlib's resources (tempfile, shutil, bz2,
lzma), which the usage writer's child, importing this package, would load for nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

_HIDDEN = ("numpy", "pandas")


class _WithoutNumpy:
    """sqlite-utils' own loader, run while numpy and pandas cannot be imported."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        hidden = [name for name in _HIDDEN if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # an import raises ImportError
        try:
            self._loader.exec_module(module)
        finally:
            for name in hidden:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]


class _SqliteUtilsFinder:
    """Finds sqlite-utils as the other finders do, and wraps its loader; once."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname != "sqlite_utils":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the other finders' answer
        if spec is not None and spec.loader is not None:
            spec.loader = cast("Loader", _WithoutNumpy(spec.loader))  # a loader by its methods
        return spec


if "sqlite_utils" not in sys.modules:
    sys.meta_path.insert(0, _SqliteUtilsFinder())
