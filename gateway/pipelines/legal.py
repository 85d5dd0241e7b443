"""Legal dictation: spoken formatting commands applied to a transcript, and the legal
formatting of the model's document. Pure functions.

A dictating lawyer says the punctuation and layout ("Dear Sir comma new paragraph ...").
The recogniser writes those words, often with punctuation of its own around them
("Dear Sir, comma, new paragraph."); `apply_commands` replaces each command by what it
means, drops the recogniser's punctuation next to a command, attaches punctuation to the
word before it, and capitalises what follows a sentence's end or a paragraph break.
`format_legal` numbers the document's paragraphs, writes "section 12" as "§ 12", and
ends each paragraph with a full stop.
"""

from __future__ import annotations

import re

# Spoken command (lower case, longest first when matching) -> what it writes.
COMMANDS: dict[str, str] = {
    "new paragraph": "\n\n",
    "next paragraph": "\n\n",
    "new line": "\n",
    "full stop": ".",
    "period": ".",
    "comma": ",",
    "semicolon": ";",
    "colon": ":",
    "question mark": "?",
    "exclamation mark": "!",
    "exclamation point": "!",
    "open quote": "\u201c",
    "begin quote": "\u201c",
    "close quote": "\u201d",
    "end quote": "\u201d",
    "unquote": "\u201d",
    "quote": "\u201c",
    "open parenthesis": "(",
    "open paren": "(",
    "close parenthesis": ")",
    "close paren": ")",
    "hyphen": "-",
    "dash": " \u2014 ",
}
_ATTACHED = frozenset({".", ",", ";", ":", "?", "!", "\u201d", ")"})  # glued to the word before
_OPENING = frozenset({"\u201c", "("})  # glued to the word after
_ENDS_SENTENCE = frozenset({".", "?", "!", "\n\n", "\n"})
_PATTERN = re.compile(
    r"[\s,.;:!?]*\b("
    + "|".join(re.escape(c) for c in sorted(COMMANDS, key=len, reverse=True))
    + r")\b[,.;:!?]*",
    re.IGNORECASE,
)


def apply_commands(transcript: str) -> str:
    """The transcript with its spoken formatting commands carried out."""
    pieces: list[str] = []
    position = 0
    for match in _PATTERN.finditer(transcript):
        pieces.append(transcript[position : match.start()])
        pieces.append("\x00" + COMMANDS[match.group(1).lower()] + "\x00")
        position = match.end()
    pieces.append(transcript[position:])
    return _layout("".join(pieces))


def _layout(marked: str) -> str:
    """Join words and command marks (`\\x00`-delimited) with the right spacing."""
    out = ""
    capital = True
    for part in re.split(r"\x00", marked):
        if part in COMMANDS.values():
            out = _join_mark(out, part)
            capital = capital or part in _ENDS_SENTENCE
            continue
        words = part.strip()
        if not words:
            continue
        if capital:
            words = words[0].upper() + words[1:]
        out = out + words if not out or out[-1] in "\n(\u201c" else f"{out} {words}"
        capital = words[-1] in ".?!"
    return out.strip()


def _join_mark(out: str, mark: str) -> str:
    if mark in _ATTACHED:
        return out.rstrip() + mark
    if mark in _OPENING:
        return (out + " " if out and out[-1] not in "\n" else out) + mark
    if mark.startswith("\n"):
        return out.rstrip() + mark
    return out.rstrip() + mark


def format_legal(text: str) -> str:
    """The document numbered by paragraph, sections as "§", each paragraph ended."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    paragraphs = [re.sub(r"^\d+[.)]\s+", "", p) for p in paragraphs]  # numbered already
    formatted = []
    for number, paragraph in enumerate(paragraphs, start=1):
        paragraph = re.sub(r"\b[Ss]ection\s+(\d+)", "\u00a7 \\1", paragraph)
        if paragraph[-1] not in ".?!:;\u201d)":
            paragraph += "."
        formatted.append(f"{number}. {paragraph[0].upper()}{paragraph[1:]}")
    return "\n\n".join(formatted)
