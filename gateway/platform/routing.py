"""Quart's route table with one rule added: a path that a rule names exactly belongs to
that rule alone.

Werkzeug matches `/v1/files/search` against both the literal rule (POST) and the rule
with a parameter (`/v1/files/<file_id>`: GET, PATCH, DELETE), so `GET /v1/files/search`
looked up a file named "search", and a 405 or an `OPTIONS` answer listed the methods of
both rules in `Allow`. Here a request whose path equals a literal rule's is answered by
that rule or by a 405 whose `Allow` lists that rule's methods, as the OpenAPI document
says (one path, its own operations).
"""

from __future__ import annotations

from typing import Any

from quart.routing import QuartMap
from werkzeug.exceptions import MethodNotAllowed
from werkzeug.routing import MapAdapter, Rule


class OwnPathMap(QuartMap):
    """A `QuartMap` whose adapters keep literal paths to their own rules."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._literal: dict[str, frozenset[str]] | None = None

    def add(self, rulefactory: Any) -> None:
        super().add(rulefactory)
        self._literal = None

    def literal_methods(self, path: str) -> frozenset[str] | None:
        """The methods of the rules without parameters whose path is `path`, or None."""
        if self._literal is None:
            table: dict[str, set[str]] = {}
            for rule in self.iter_rules():
                if not rule.arguments:
                    table.setdefault(rule.rule, set()).update(rule.methods or ())
            self._literal = {path: frozenset(methods) for path, methods in table.items()}
        return self._literal.get(path)

    def bind(self, *args: Any, **kwargs: Any) -> MapAdapter:
        return _own(super().bind(*args, **kwargs))

    def bind_to_request(self, *args: Any, **kwargs: Any) -> MapAdapter:
        return _own(super().bind_to_request(*args, **kwargs))


class OwnPathAdapter(MapAdapter):
    map: OwnPathMap

    def match(
        self,
        path_info: str | None = None,
        method: str | None = None,
        return_rule: bool = False,
        query_args: Any = None,
        websocket: bool | None = None,
    ) -> tuple[Any, Any]:
        owned = self.map.literal_methods(self.path_info if path_info is None else path_info)
        try:
            rule, args = super().match(path_info, method, True, query_args, websocket)
        except MethodNotAllowed:
            if owned is None:
                raise
            raise MethodNotAllowed(valid_methods=sorted(owned)) from None
        assert isinstance(rule, Rule)
        if owned is not None and rule.arguments:  # a parameter took a literal path's request
            raise MethodNotAllowed(valid_methods=sorted(owned))
        return (rule if return_rule else rule.endpoint), args


def _own(adapter: MapAdapter) -> OwnPathAdapter:
    return OwnPathAdapter(
        adapter.map,
        adapter.server_name,
        adapter.script_name,
        adapter.subdomain,
        adapter.url_scheme,
        adapter.path_info,
        adapter.default_method,
        adapter.query_args,
    )
