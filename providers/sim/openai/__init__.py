"""The OpenAI API as the simulator speaks it: chat completions, responses, embeddings,
models.

Bodies, streamed chunks and errors follow the public wire format (as the official
`openai` client parses it) closely enough that unmodified OpenAI clients and the
gateway's OpenAI adapter cannot tell the simulator from the real service, except for
the content, which is deterministic (see `content`).
"""

from providers.sim.core import Route
from providers.sim.openai.chat import (
    ChatPlan,
    ChunkEncoder,
    chat_args,
    chat_completions,
    completion_json,
    encode_completion,
    message_text,
    plan_chat,
)
from providers.sim.openai.common import VENDOR, OpenAIError, check_auth, fault_error, parse_body
from providers.sim.openai.embeddings import embeddings
from providers.sim.openai.models import MODEL_LIST, get_model, list_models
from providers.sim.openai.responses import create_response

ROUTES: list[Route] = [
    Route("POST", "/v1/chat/completions", chat_completions),
    Route("POST", "/v1/responses", create_response),
    Route("POST", "/v1/embeddings", embeddings),
    Route("GET", "/v1/models", list_models),
    Route("GET", "/v1/models/{model}", get_model),
]

__all__ = [
    "MODEL_LIST",
    "ROUTES",
    "VENDOR",
    "ChatPlan",
    "ChunkEncoder",
    "OpenAIError",
    "chat_args",
    "check_auth",
    "completion_json",
    "encode_completion",
    "fault_error",
    "message_text",
    "parse_body",
    "plan_chat",
]
