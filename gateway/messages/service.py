"""Serving Anthropic's Messages API: a message through chat's path, and token counts.

Orchestration only: reading is `input`, rendering `render`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.chat.input import parse_chat_body
from gateway.chat.service import ChatAnswering, serve_chat
from gateway.messages.dialect import MESSAGES
from gateway.messages.input import parse_messages_body
from gateway.platform.auth import Principal
from gateway.platform.errors import not_found
from gateway.platform.state import AppState
from gateway.upstream.accounting import estimate_prompt_tokens


def serve_message(
    state: AppState, principal: Principal, body: Any, headers: Mapping[str, str]
) -> ChatAnswering:
    """`async with serve_message(...) as answer:` as chat's `serve_chat`."""
    return serve_chat(state, principal, body, headers, MESSAGES)


def count_tokens(state: AppState, principal: Principal, body: Any) -> dict[str, int]:
    """`POST /v1/messages/count_tokens`: the prompt's tokens as the gateway counts them
    for admission and routing (the same estimate whichever vendor would serve it)."""
    principal.require("chat")
    request = parse_chat_body(parse_messages_body(body, counting=True).chat_body).request
    if state.catalog.model(request.model) is None:
        raise not_found(
            "model_not_found", f"The model '{request.model}' does not exist.", model=request.model
        )
    principal.require_model(request.model)
    return {"input_tokens": estimate_prompt_tokens(request.messages, request.tools)}
