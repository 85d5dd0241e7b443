"""The catalog's retired ids: models their vendor no longer serves, kept so that a request
naming one gets a 404 that says when it went and what to use instead."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

import attrs

from providers.catalog_model import CatalogError, ModelInfo


@attrs.frozen(slots=True)
class Retirement:
    """A model id its vendor no longer serves (the catalog's `retired` list): why a request
    naming it gets a 404 and what to use instead. `retired_on` is the shutdown date
    (YYYY-MM-DD); None for an id the vendor never served (an SDK keeps some for
    compatibility)."""

    id: str
    provider: str
    retired_on: str | None
    replacement: str

    def message(self) -> str:
        """The 404's message: the date, or that the vendor never served it, and what to use."""
        when = (
            f"was retired by its provider on {self.retired_on}"
            if self.retired_on is not None
            else "is not a model its provider serves"
        )
        return f"The model '{self.id}' {when}; use '{self.replacement}' instead."


class _OfProvider(Protocol):
    @property
    def provider(self) -> str: ...


_Named = TypeVar("_Named", bound=_OfProvider)


def prefixed(table: Mapping[str, _Named], name: str) -> _Named | None:
    """The entry of `provider/id` in `table` (keyed by bare ids) when it is `provider`'s:
    a prefix naming another provider finds nothing."""
    provider, _, bare = name.partition("/")
    found = table.get(bare)
    return found if found is not None and found.provider == provider else None


def retired_table(
    retired: Iterable[Retirement], by_name: Mapping[str, ModelInfo], providers: Iterable[str]
) -> dict[str, Retirement]:
    """The `retired` ids by id; `CatalogError` if one is still served (a name of
    `by_name`), names an unknown replacement or provider, or is listed twice."""
    known = set(providers)
    table: dict[str, Retirement] = {}
    for r in retired:
        replacement = by_name.get(r.replacement)
        if r.id in by_name or r.id in table:
            raise CatalogError(f"retired id {r.id!r} is also a catalog name or repeated")
        if replacement is None or replacement.id != r.replacement:
            raise CatalogError(f"retired id {r.id!r} names unknown replacement")
        if r.provider not in known:
            raise CatalogError(f"retired id {r.id!r} names unknown provider {r.provider!r}")
        table[r.id] = r
    return table
