"""Local receivers for what the gateway sends out, on plain trio sockets.

`WebhookReceiver` is a minimal HTTP/1.1 server that answers each request with the next
scripted status (then 200) and hands the request to the test through a channel.
`SmtpReceiver` is a minimal SMTP server (the commands `smtplib` uses) that hands each
message to the test; the gateway's `smtplib` client runs in a thread and talks to it over
a real socket, so the test exercises the real protocol without asyncio (`aiosmtpd`).
"""

from __future__ import annotations

import attrs
import trio

HANG = 0  # a scripted "status" that never answers (a dead endpoint holding the call)


@attrs.frozen
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


async def _read_until(stream: trio.SocketStream, buffer: bytearray, marker: bytes) -> bytes:
    while marker not in buffer:
        chunk = await stream.receive_some(65536)
        if not chunk:
            raise EOFError
        buffer += chunk
    index = buffer.index(marker) + len(marker)
    taken = bytes(buffer[:index])
    del buffer[:index]
    return taken


@attrs.define(eq=False)
class WebhookReceiver:
    statuses: list[int] = attrs.field(factory=list)
    port: int = 0
    send: trio.MemorySendChannel[Received] = attrs.field(init=False)
    requests: trio.MemoryReceiveChannel[Received] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.send, self.requests = trio.open_memory_channel[Received](100)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        async with stream:
            while True:
                try:
                    head = await _read_until(stream, buffer, b"\r\n\r\n")
                except (EOFError, trio.BrokenResourceError):
                    return
                received = await self._request(stream, buffer, head)
                status = self.statuses.pop(0) if self.statuses else 200
                await self.send.send(received)
                if status == HANG:
                    await trio.sleep_forever()
                await stream.send_all(
                    f"HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok".encode()
                )

    async def _request(self, stream: trio.SocketStream, buffer: bytearray, head: bytes) -> Received:
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(buffer) < length:
            buffer += await stream.receive_some(65536)
        body = bytes(buffer[:length])
        del buffer[:length]
        return Received(method, path, headers, body)


@attrs.frozen
class Mail:
    sender: str
    recipients: tuple[str, ...]
    data: bytes


@attrs.define(eq=False)
class SmtpReceiver:
    port: int = 0
    send: trio.MemorySendChannel[Mail] = attrs.field(init=False)
    mails: trio.MemoryReceiveChannel[Mail] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.send, self.mails = trio.open_memory_channel[Mail](100)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        sender, recipients = "", list[str]()
        async with stream:
            await stream.send_all(b"220 test ESMTP\r\n")
            while True:
                try:
                    line = (await _read_until(stream, buffer, b"\r\n")).decode().strip()
                except (EOFError, trio.BrokenResourceError):
                    return
                verb = line[:4].upper()
                if verb in ("EHLO", "HELO"):
                    await stream.send_all(b"250 test\r\n")
                elif verb == "MAIL":
                    sender, recipients = line.split(":", 1)[1].strip(" <>"), []
                    await stream.send_all(b"250 OK\r\n")
                elif verb == "RCPT":
                    recipients.append(line.split(":", 1)[1].strip(" <>"))
                    await stream.send_all(b"250 OK\r\n")
                elif verb == "DATA":
                    await stream.send_all(b"354 go on\r\n")
                    data = await _read_until(stream, buffer, b"\r\n.\r\n")
                    await self.send.send(Mail(sender, tuple(recipients), data))
                    await stream.send_all(b"250 queued\r\n")
                elif verb == "QUIT":
                    await stream.send_all(b"221 bye\r\n")
                    return
                else:
                    await stream.send_all(b"250 OK\r\n")
