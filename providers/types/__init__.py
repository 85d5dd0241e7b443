"""Canonical request and answer objects shared by every provider adapter, one module per
family: `usage` (metered units), `chat`, `retrieval` (embeddings, rerank). This package
re-exports them, so adapters and the gateway import from `providers.types`.
"""

from typing import Any

from providers.types.chat import (
    ChatChoice,
    ChatChunk,
    ChatRequest,
    ChatResult,
    TokenLogprob,
    ToolCall,
    ToolCallDelta,
    result_of_choices,
)
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
    "ChatChoice",
    "ChatChunk",
    "ChatRequest",
    "ChatResult",
    "EmbeddingRequest",
    "EmbeddingResult",
    "RerankHit",
    "RerankRequest",
    "RerankResult",
    "TokenLogprob",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "result_of_choices",
]
