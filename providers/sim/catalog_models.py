"""The catalog's models of one vendor, for the simulators' model lists.

The simulators answer any model id (but those starting with `unknown`), and list what
their vendor lists: their own fixed examples plus every catalog model of that vendor, so
that a model added to the catalog is one the simulated vendor knows.
"""

from __future__ import annotations

from providers.catalog import ModelInfo, load_catalog

SCOPE = ("chat", "embedding", "rerank")
"""The model types the chat, embeddings and rerank simulators list (speech, transcription
and OCR simulators keep their own lists)."""


def vendor_models(provider: str, types: tuple[str, ...] = SCOPE) -> tuple[ModelInfo, ...]:
    """The catalog's models of `provider` of the given types, in catalog order."""
    return tuple(m for m in load_catalog().models(provider=provider) if m.type in types)


def vendor_ids(provider: str, types: tuple[str, ...] = SCOPE) -> tuple[str, ...]:
    """Their ids as the vendor knows them (the catalog's upstream ids), without repeats."""
    return tuple(dict.fromkeys(m.upstream_id for m in vendor_models(provider, types)))


def merged(
    fixed: tuple[str, ...], provider: str, types: tuple[str, ...] = SCOPE
) -> tuple[str, ...]:
    """`fixed` first, then the catalog's models the list lacks."""
    return tuple(dict.fromkeys((*fixed, *vendor_ids(provider, types))))
