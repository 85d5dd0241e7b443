"""Cohere's API v2: chat, rerank and embeddings, one module per family.

`chat` and `retrieval` hold the pure translations, `errors` the mapping of Cohere's error
answers, `adapter` the thin class the gateway calls.
"""

from __future__ import annotations

from providers.cohere.adapter import CohereProvider
from providers.cohere.errors import map_cohere_error
from providers.cohere.retrieval import (
    MAX_TEXTS_PER_CALL,
    embed_payload,
    parse_embed,
    parse_model_names,
    parse_rerank,
    rerank_payload,
)

__all__ = [
    "MAX_TEXTS_PER_CALL",
    "CohereProvider",
    "embed_payload",
    "map_cohere_error",
    "parse_embed",
    "parse_model_names",
    "parse_rerank",
    "rerank_payload",
]
