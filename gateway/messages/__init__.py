"""Anthropic's Messages API as a front door over chat's path (docs/messages-api.md).

`input` reads a request into the canonical chat request; `render` says the canonical answer
as a message, its stream as Anthropic's events and every error in Anthropic's shape;
`dialect` is the seam chat's service takes (`gateway.chat.dialect`); `service` serves a
message and counts tokens.
"""
