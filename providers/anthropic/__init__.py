"""The Anthropic Messages API (`POST /v1/messages`, version 2023-06-01).

The gateway's canonical request has the chat-completions shape; Anthropic differs in ways
that matter on the wire, and each is handled by one pure function of `payload`:

- the system prompt is a top-level `system` field, not a message: every system message
  (wherever it stands) is merged into it, in order;
- messages hold typed content blocks, roles must alternate user/assistant, and tool
  results travel as `tool_result` blocks inside a *user* message: consecutive messages
  that land on the same role are merged into one;
- `max_tokens` is required: the endpoint's `default_max_tokens` setting (else 4096) fills
  it when the client gave none;
- `temperature` ranges 0-1, not 0-2: values above 1 are *clamped* to 1 rather than
  scaled, so that the common values (0, 0.2, 0.7, the default 1.0) keep their meaning;
  only the rarely used 1-2 range loses resolution;
- `presence_penalty`, `frequency_penalty`, `seed` and `response_format` have no
  Anthropic counterpart and are dropped.

Answers (JSON, or a stream of named SSE events read by `AnthropicStreamTranslator`) come
back as canonical objects, and error bodies (`{"type": "error", "error": {type, message}}`)
as the `providers.errors` hierarchy.
"""

from providers.anthropic.adapter import AnthropicProvider
from providers.anthropic.answers import AnthropicStreamTranslator, finish_reason, parse_message
from providers.anthropic.errors import map_anthropic_error, map_error_object
from providers.anthropic.payload import image_block, messages_payload

__all__ = [
    "AnthropicProvider",
    "AnthropicStreamTranslator",
    "finish_reason",
    "image_block",
    "map_anthropic_error",
    "map_error_object",
    "messages_payload",
    "parse_message",
]
