"""OpenAI's Responses API as a front door over chat's path (docs/responses-api.md).

`input` and `items` read a request into the canonical chat request; `render` and `events`
say the canonical answer as a response, whole or streamed; `dialect` is the seam chat's
service takes (`gateway.chat.dialect`); `service` continues stored conversations, stores
and erases responses; `websocket` serves the WebSocket mode's turns.
"""
