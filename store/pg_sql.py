"""The store's SQL as psycopg takes it: placeholders and literal percent signs.

The store writes SQL with SQLite's placeholders, `?` and `:name`. psycopg takes `%s` and
`%(name)s` and reads every other `%` as the start of one, so a statement with parameters
is rewritten once (cached): placeholders outside string literals and quoted names are
renamed, `%` doubled. A statement without parameters is sent as written.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKENS = re.compile(
    r"""(?P<literal>'(?:[^']|'')*'|"(?:[^"]|"")*")"""
    r"|(?P<positional>\?)"
    r"|(?<!:):(?P<named>[A-Za-z_]\w*)"
    r"|(?P<percent>%)"
)


def _replace(match: re.Match[str]) -> str:
    if match.group("literal") is not None:
        return match.group(0)
    if match.group("positional") is not None:
        return "%s"
    if match.group("named") is not None:
        return f"%({match.group('named')})s"
    return "%%"


@lru_cache(maxsize=4096)
def placeholders(sql: str) -> str:
    """`sql` with SQLite's placeholders in psycopg's form (for a call with parameters)."""
    return _TOKENS.sub(_replace, sql)
