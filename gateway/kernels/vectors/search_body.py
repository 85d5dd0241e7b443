"""The fields every search body shares (data documents, files): a query and `top_k`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from gateway.platform.errors import invalid_request
from gateway.platform.shapes import NON_BLANK, Doc, Length, Range

MAX_QUERY_CHARS = 4000
MAX_TOP_K = 50


def query_and_top_k(body: Mapping[str, Any], fields: frozenset[str]) -> tuple[str, int]:
    """Pure: the body's `query` and `top_k` (default 5), after refusing a field not among
    `fields`; a 400 naming the field for anything else."""
    unknown = sorted(set(body) - fields)
    if unknown:
        raise invalid_request(f"Unknown field '{unknown[0]}'.", param=unknown[0])
    query = body.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise invalid_request(
            f"'query' must be a non-empty string of at most {MAX_QUERY_CHARS} characters.",
            param="query",
        )
    top_k = body.get("top_k", 5)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise invalid_request(
            f"'top_k' must be an integer from 1 to {MAX_TOP_K}.", param="top_k", value=top_k
        )
    return query, top_k


# The same two fields, declared (`gateway.platform.shapes`) for the search bodies' types.
Query = Annotated[str, NON_BLANK, Length(most=MAX_QUERY_CHARS), Doc("What to search for")]
TopK = Annotated[int, Range(least=1, most=MAX_TOP_K), Doc("How many hits at most")]
