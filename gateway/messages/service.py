"""Serving Anthropic's Messages API: a message through chat's path, and token counts.

Orchestration only: reading is `input`, rendering `render`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from gateway.messages.dialect import MESSAGES
from gateway.messages.input import parse_messages_body
from gateway.messages.origins import rename
from gateway.messages.services import MessagesServices
from gateway.messages.shapes import TokenCount
from gateway.platform.auth import Principal
from gateway.platform.body import Answer
from gateway.platform.errors import ApiError, not_found
from gateway.upstream.accounting import estimate_prompt_tokens
from gateway.upstream.endpoints import refuse_off_endpoint


@asynccontextmanager
async def serve_message(
    messages: MessagesServices, principal: Principal, body: Any, headers: Mapping[str, str]
) -> AsyncIterator[Answer]:
    """`async with serve_message(...) as answer:` as chat's own answering context; a
    refusal that names a part of chat's messages names the request's own instead
    (`gateway.messages.origins`)."""
    try:
        async with messages.serve_chat(principal, body, headers, MESSAGES) as answer:
            yield answer
    except ApiError as error:
        rename(error, body)
        raise


def count_tokens(messages: MessagesServices, principal: Principal, body: Any) -> TokenCount:
    """`POST /v1/messages/count_tokens`: the prompt's tokens as the gateway counts them
    for admission and routing (the same estimate whichever vendor would serve it)."""
    principal.require("chat")
    chat = parse_messages_body(body, counting=True).chat_body
    model = chat["model"]
    info = messages.catalog.model(model)
    if info is None:
        raise not_found("model_not_found", f"The model '{model}' does not exist.", model=model)
    principal.require_model(info.id)
    refuse_off_endpoint(messages.catalog, model, MESSAGES.endpoint)  # as `create` refuses it
    return {"input_tokens": estimate_prompt_tokens(chat["messages"], chat.get("tools"))}
