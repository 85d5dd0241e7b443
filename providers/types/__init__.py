"""Canonical request and answer objects shared by every provider adapter, one module per
family: `usage` (metered units), `chat`, `retrieval` (embeddings, rerank). This package
re-exports them, so adapters and the gateway import from `providers.types`.
"""

from typing import Any

from providers.types.chat import ChatChunk, ChatRequest, ChatResult, ToolCall, ToolCallDelta
from providers.types.retrieval import (
    EmbeddingRequest,
    EmbeddingResult,
    RerankHit,
    RerankRequest,
    RerankResult,
)
from providers.types.usage import Usage

JSON = dict[str, Any]  # a vendor payload, as adapters build and read it

__all__ = [
    "JSON",
    "ChatChunk",
    "ChatRequest",
    "ChatResult",
    "EmbeddingRequest",
    "EmbeddingResult",
    "RerankHit",
    "RerankRequest",
    "RerankResult",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
]
