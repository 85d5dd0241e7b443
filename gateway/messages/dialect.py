"""Anthropic's Messages API as a dialect in front of chat (`gateway.chat.dialect`)."""

from __future__ import annotations

from typing import Any

from gateway.chat.dialect import Parsed
from gateway.chat.input import parse_chat_body
from gateway.chat.trip import Trip
from gateway.messages.input import parse_messages_body
from gateway.messages.render import MessageEvents, message_body
from gateway.upstream.accounting import Accounting
from providers.types import ChatResult


class AnthropicMessages:
    """`POST /v1/messages`."""

    def parse(self, body: Any) -> Parsed:
        chat = parse_messages_body(body).chat_body
        return Parsed(parse_chat_body(chat), chat)

    def answer(self, trip: Trip, result: ChatResult, accounting: Accounting) -> dict[str, Any]:
        return message_body(trip, result, accounting)

    def frames(self, trip: Trip) -> MessageEvents:
        return MessageEvents(trip)


MESSAGES = AnthropicMessages()
