"""The fields every search body shares (data documents, files): a query and `top_k`,
declared once for the families' search types (`gateway.platform.shapes`)."""

from __future__ import annotations

from typing import Annotated

from gateway.platform.shapes import NON_BLANK, Doc, Length, Range

MAX_QUERY_CHARS = 4000
MAX_TOP_K = 50

Query = Annotated[str, NON_BLANK, Length(most=MAX_QUERY_CHARS), Doc("What to search for")]
TopK = Annotated[int, Range(least=1, most=MAX_TOP_K), Doc("How many hits at most")]
