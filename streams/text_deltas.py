"""A stream's plain text deltas read without parsing them (pure).

Most events of a streamed chat answer are the same JSON document but for one string: the
delta's text (`{"id":"chatcmpl-1",...,"choices":[{"index":0,"delta":{"content":"Hel"},
...}]}`). Parsing each with `orjson.loads` and walking the result costs more than the
relay does with it. `TextShape` learns, from one event a full parse found to be a plain
text delta, the text before and after that text's JSON string; a later event that is
that very text before, a string body without any escape, and that very text after, is
a plain text delta too, and the string body is its text.

Why that is correct for every JSON (nested objects, escaped quotes, duplicate keys, any
member order): a JSON lexer reads left to right, so the identical head leaves it exactly
where it was in the learned event, inside the delta's string; a body without `"`, `\\`
or a control character stays inside that string and means its own characters; the
identical tail then closes it and reads as it did. The document is the learned one with
another text, and whatever made the learned event plain holds for it. The learned
event must hold no escape at all (so that every string in it, the text's too, is written
as its own characters) and the text's string must be found once in it (so that it is the
one the parse took). Anything else (another shape,
a finish, usage, an escaped character) is not taken here: the caller parses it whole.
"""

from __future__ import annotations

import re

# What may not appear in a JSON string body taken as it is: its end, an escape, or a
# control character (not allowed unescaped; the full parse refuses it).
_NOT_VERBATIM = re.compile('["\\\\\x00-\x1f]')


class TextShape:
    """The text around the delta's string in one stream's plain text events."""

    __slots__ = ("_after", "_before", "_least")

    def __init__(self) -> None:
        self._before = self._after = "\x00"  # no event's data starts with NUL: nothing taken
        self._least = 0

    def text(self, data: str) -> str | None:
        """The text of `data` when it is a plain text delta of the learned shape; None
        when it is not known to be one (then parse it whole)."""
        if (
            len(data) < self._least
            or not data.startswith(self._before)
            or not data.endswith(self._after)
        ):
            return None
        body = data[len(self._before) : len(data) - len(self._after)]
        return None if _NOT_VERBATIM.search(body) else body

    def learn(self, data: str, text: str) -> None:
        """`data` was parsed whole and is a plain text delta whose text is `text`: learn
        the shape around it, when the text's string is unambiguous; otherwise keep the
        shape already known. Unambiguous: `data` has no escape at all (so every string of
        it is written as its characters, the text's too) and the text's string is found
        once in it (so that string is the one the parse took)."""
        if not text or "\\" in data or _NOT_VERBATIM.search(text):
            return
        token = '"' + text + '"'
        at = data.find(token)
        if at < 0 or data.find(token, at + 1) >= 0:
            return
        self._before = data[: at + 1]
        self._after = data[at + 1 + len(text) :]
        self._least = len(self._before) + len(self._after)
