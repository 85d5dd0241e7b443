"""The Google Gemini API (Generative Language API, v1beta): `payload` (requests out),
`answers` (answers and streams in), `errors`, and the `adapter` that wires them.

Gemini's wire format differs from chat-completions in ways the translation must respect:
system messages travel apart (`systemInstruction`), the assistant is role `model`, turns
of one role must not repeat (consecutive ones are merged), tool results are
`functionResponse` parts of a *user* turn named by function rather than by call id, and
function calls arrive whole (never as argument fragments), without ids of their own on
most models. The pure functions of `payload` and `answers` translate both ways; `GoogleProvider`
only moves bytes. `endpoint.base_url` is the vendor root (the official
`https://generativelanguage.googleapis.com`, or the simulator's `/google` prefix): every
path starts with `/v1beta`.
"""

from providers.google.adapter import GoogleProvider
from providers.google.answers import (
    StreamTranslator,
    estimate_tokens,
    parse_generate,
    parse_model_ids,
    parse_vectors,
)
from providers.google.errors import map_google_error
from providers.google.payload import embedding_payload, generate_payload, model_path, openapi_schema

__all__ = [
    "GoogleProvider",
    "StreamTranslator",
    "embedding_payload",
    "estimate_tokens",
    "generate_payload",
    "map_google_error",
    "model_path",
    "openapi_schema",
    "parse_generate",
    "parse_model_ids",
    "parse_vectors",
]
