"""Text of a Word 97-2003 binary document (.doc), read offline with `olefile`.

A .doc is an OLE compound file. Its `WordDocument` stream starts with the File Information
Block ([MS-DOC] 2.5.1): `wIdent` 0xA5EC, flags telling which table stream (`0Table` or
`1Table`) holds the piece table and whether the file is encrypted, `ccpText` (how many
characters the main text has) and `fcClx`/`lcbClx` (where the piece table is). The piece
table ([MS-DOC] 2.9.38, `Clx`: property runs `Prc` then one `Pcdt`) maps character
positions to byte ranges of `WordDocument`, each piece either 8-bit (cp1252, "compressed")
or UTF-16LE. The main text is characters 0 to `ccpText`; Word's control characters become
line breaks and tabs, field instructions are dropped (their shown result stays), and an
explicit page break (form feed) starts a new page. No other library in the package index
reads this format without shelling out (textract runs antiword), and olefile is the
well-kept reader of the container that oletools and Pillow use.
"""

from __future__ import annotations

import struct
from pathlib import Path

import olefile

W_IDENT = 0xA5EC
F_ENCRYPTED = 0x0100
F_WHICH_TABLE = 0x0200
FC_CLX_INDEX = 33  # fcClx's pair in FibRgFcLcb97
_TRANSLATE = str.maketrans({"\r": "\n", "\x0b": "\n", "\x07": "\t", "\x1e": "-", "\x1f": ""})


class WordError(ValueError):
    """The file is not a readable Word 97-2003 document."""


def read_text(path: Path) -> list[str]:
    """The document's main text, one string per page (explicit page breaks)."""
    if not olefile.isOleFile(str(path)):
        raise WordError("The file is not an OLE compound document.")
    with olefile.OleFileIO(str(path)) as ole:
        if not ole.exists("WordDocument"):
            raise WordError("The compound document has no WordDocument stream.")
        word = ole.openstream("WordDocument").read()
        flags, ccp_text, fc_clx, lcb_clx = _fib(word)
        table_name = "1Table" if flags & F_WHICH_TABLE else "0Table"
        if not ole.exists(table_name):
            raise WordError(f"The document's table stream {table_name} is missing.")
        table = ole.openstream(table_name).read()
    text = _main_text(word, table[fc_clx : fc_clx + lcb_clx], ccp_text)
    return [_cleaned(page) for page in text.split("\x0c")]


def _fib(word: bytes) -> tuple[int, int, int, int]:
    if len(word) < 34 or struct.unpack_from("<H", word, 0)[0] != W_IDENT:
        raise WordError("The WordDocument stream does not start with a Word 97 header.")
    flags = struct.unpack_from("<H", word, 0x0A)[0]
    if flags & F_ENCRYPTED:
        raise WordError("The document is encrypted.")
    at = 32
    csw = struct.unpack_from("<H", word, at)[0]
    at += 2 + csw * 2
    cslw = struct.unpack_from("<H", word, at)[0]
    lw = at + 2
    at = lw + cslw * 4
    cb_fc_lcb = struct.unpack_from("<H", word, at)[0]
    if cslw < 4 or cb_fc_lcb <= FC_CLX_INDEX or len(word) < at + 2 + cb_fc_lcb * 8:
        raise WordError("The document's header is truncated.")
    ccp_text = struct.unpack_from("<i", word, lw + 12)[0]
    fc_clx, lcb_clx = struct.unpack_from("<II", word, at + 2 + FC_CLX_INDEX * 8)
    return flags, ccp_text, fc_clx, lcb_clx


def _main_text(word: bytes, clx: bytes, ccp_text: int) -> str:
    at = 0
    while at < len(clx) and clx[at] == 0x01:  # Prc: property runs, skipped
        at += 3 + struct.unpack_from("<h", clx, at + 1)[0]
    if at + 5 > len(clx) or clx[at] != 0x02:
        raise WordError("The document's piece table is missing.")
    size = struct.unpack_from("<I", clx, at + 1)[0]
    plc = clx[at + 5 : at + 5 + size]
    count = (len(plc) - 4) // 12
    if count <= 0:
        raise WordError("The document's piece table is empty.")
    cps = struct.unpack_from(f"<{count + 1}I", plc, 0)
    parts = []
    for i in range(count):
        start, end = cps[i], min(cps[i + 1], ccp_text)
        if start >= end:
            break
        fc = struct.unpack_from("<I", plc, 4 * (count + 1) + 8 * i + 2)[0]
        parts.append(_piece(word, fc, end - start))
    return "".join(parts)


def _piece(word: bytes, fc: int, chars: int) -> str:
    if fc & 0x40000000:  # 8-bit text at half the offset
        offset = (fc & 0x3FFFFFFF) // 2
        return word[offset : offset + chars].decode("cp1252", errors="replace")
    return word[fc : fc + 2 * chars].decode("utf-16-le", errors="replace")


def _cleaned(text: str) -> str:
    """Fields keep their result (between 0x14 and 0x15), not their instruction (0x13 to
    0x14); object anchors and other control characters go."""
    kept, depth_stack = [], []
    for char in text:
        if char == "\x13":
            depth_stack.append(False)  # in an instruction
        elif char == "\x14" and depth_stack:
            depth_stack[-1] = True  # in the result
        elif char == "\x15" and depth_stack:
            depth_stack.pop()
        elif not depth_stack or all(depth_stack):
            kept.append(char)
    plain = "".join(kept).translate(_TRANSLATE)
    return "".join(c for c in plain if c in "\n\t" or c >= " ").strip()
