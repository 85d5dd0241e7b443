"""Canonical embedding and rerank requests and answers."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from providers.types.usage import Usage


@attrs.frozen(slots=True)
class EmbeddingRequest:
    """Texts to embed; `dimensions` only for models that can shorten their vectors.

    `token_inputs` holds the client's token ids when it sent ids (OpenAI's tokenizer's):
    a vendor that reads them (OpenAI) is sent those; the others embed `inputs`, their
    text."""

    model: str
    inputs: Sequence[str]
    dimensions: int | None = None
    user: str | None = None
    token_inputs: Sequence[Sequence[int]] | None = None


@attrs.frozen(slots=True)
class EmbeddingResult:
    """One float vector per input, in input order."""

    model: str
    vectors: Sequence[Sequence[float]]
    usage: Usage


@attrs.frozen(slots=True)
class RerankRequest:
    model: str
    query: str
    documents: Sequence[str]
    top_n: int | None = None


@attrs.frozen(slots=True)
class RerankHit:
    index: int
    relevance_score: float


@attrs.frozen(slots=True)
class RerankResult:
    """Hits ordered by relevance, best first; `search_units` as the vendor bills them."""

    model: str
    hits: Sequence[RerankHit]
    search_units: int = 1
