"""Anthropic's Messages API as a dialect in front of chat (`gateway.kernels.dialects`)."""

from __future__ import annotations

from typing import Any

from gateway.kernels.dialects import Answered
from gateway.messages.input import parse_messages_body
from gateway.messages.render import MessageEvents, message_body
from gateway.upstream.accounting import Accounting
from providers.types import ChatResult


class AnthropicMessages:
    """`POST /v1/messages`."""

    endpoint = "messages"

    def chat_body(self, body: Any) -> dict[str, Any]:
        return parse_messages_body(body).chat_body

    def truncation(self) -> int | None:
        return None  # the Messages API never shortens a conversation

    def answer(self, answered: Answered, result: ChatResult, accounting: Accounting) -> Any:
        return message_body(answered, result, accounting)

    def frames(self, answered: Answered) -> MessageEvents:
        return MessageEvents(answered)


MESSAGES = AnthropicMessages()
