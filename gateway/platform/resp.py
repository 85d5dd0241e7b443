"""A small Redis-protocol (RESP2) client on trio sockets: commands, scripts, pub/sub.

Why our own: redis-py and coredis speak asyncio only, and the trio clients on PyPI
(`redio`, `redtrio`) have not been released since 2022. The gateway needs a handful of
commands (EVALSHA/EVAL, PUBLISH, SUBSCRIBE, PING, AUTH, SELECT), and RESP2 is a
five-type line protocol, so one module owns it, typed and tested against a real
`redis-server`.

Works with Redis and Valkey alike. Callers set deadlines (`trio.fail_after`); a
connection whose command was interrupted (cancelled, timed out, broken) is closed rather
than returned to the pool, since its reply may still be on the wire.
"""

from __future__ import annotations

import hashlib
import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import unquote, urlparse

import attrs
import trio

Reply = bytes | int | list["Reply"] | None
CRLF = b"\r\n"
MAX_BULK = 512 * 1024 * 1024


class RedisUnavailable(Exception):
    """The server could not be reached, or the connection broke mid-command."""


class RedisReplyError(Exception):
    """The server answered a command with an error reply (`-ERR ...`)."""


# Every way a command under the caller's deadline fails because of the server: what the
# shared-state callers catch to apply their unavailable policy.
SERVER_FAILURES = (RedisUnavailable, RedisReplyError, trio.TooSlowError)


@attrs.frozen
class RedisAddress:
    """Where the server is and how to log in, parsed from `redis://[:password@]host:port/db`."""

    host: str
    port: int
    password: str | None = attrs.field(default=None, repr=False)
    username: str | None = None
    db: int = 0

    @classmethod
    def parse(cls, url: str) -> RedisAddress:
        parsed = urlparse(url)
        if parsed.scheme not in ("redis", "valkey") or not parsed.hostname:
            raise ValueError(f"not a redis:// URL: {url!r}")
        path = parsed.path.strip("/")
        return cls(
            host=parsed.hostname,
            port=parsed.port or 6379,
            password=unquote(parsed.password) if parsed.password else None,
            username=unquote(parsed.username) if parsed.username else None,
            db=int(path) if path else 0,
        )


def encode_command(args: tuple[bytes | str | int | float, ...]) -> bytes:
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


@attrs.define(eq=False)
class ReplyReader:
    """Parses replies from a byte buffer fed by `feed` (pure: no I/O, tested with bytes)."""

    _buffer: bytearray = attrs.field(factory=bytearray)
    _pos: int = 0

    def feed(self, data: bytes) -> None:
        if self._pos:
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    def next_reply(self) -> tuple[bool, Reply | RedisReplyError]:
        """(True, reply) when a whole reply is buffered, else (False, None); an error
        reply is returned (not raised) as a `RedisReplyError`."""
        start = self._pos
        try:
            return True, self._parse()
        except _Incomplete:
            self._pos = start
            return False, None

    def _line(self) -> bytes:
        end = self._buffer.find(CRLF, self._pos)
        if end < 0:
            raise _Incomplete
        line = bytes(self._buffer[self._pos : end])
        self._pos = end + 2
        return line

    def _parse(self) -> Reply | RedisReplyError:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RedisReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return self._bulk(int(rest))
        if kind == b"*":
            count = int(rest)
            if count < 0:
                return None
            items: list[Reply] = []
            for _ in range(count):
                item = self._parse()
                if isinstance(item, RedisReplyError):
                    raise item
                items.append(item)
            return items
        raise RedisUnavailable(f"protocol error: unexpected reply {line[:40]!r}")

    def _bulk(self, size: int) -> bytes | None:
        if size < 0:
            return None
        if size > MAX_BULK:
            raise RedisUnavailable("protocol error: bulk reply too large")
        end = self._pos + size
        if len(self._buffer) < end + 2:
            raise _Incomplete
        data = bytes(self._buffer[self._pos : end])
        self._pos = end + 2
        return data


class _Incomplete(Exception):
    pass


@attrs.define(eq=False)
class Connection:
    """One socket to the server, used by one task at a time."""

    stream: trio.SocketStream
    reader: ReplyReader = attrs.field(factory=ReplyReader)

    async def send(self, *args: bytes | str | int | float) -> None:
        try:
            await self.stream.send_all(encode_command(args))
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise RedisUnavailable(f"redis connection lost: {exc}") from exc

    async def read(self) -> Reply:
        """The next reply; an error reply raises `RedisReplyError`."""
        while True:
            done, reply = self.reader.next_reply()
            if done:
                if isinstance(reply, RedisReplyError):
                    raise reply
                return reply
            try:
                data = await self.stream.receive_some(65536)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise RedisUnavailable(f"redis connection lost: {exc}") from exc
            if not data:
                raise RedisUnavailable("redis closed the connection")
            self.reader.feed(data)

    async def command(self, *args: bytes | str | int | float) -> Reply:
        await self.send(*args)
        return await self.read()

    def close(self) -> None:
        """Close at once, without a checkpoint, so that it also works while cancelled."""
        self.stream.socket.close()

    def idle_usable(self) -> bool:
        """For a connection that sat idle: False once anything is readable on it, which is
        the server having closed it (a restart) or bytes nobody asked for. A command sent
        on it would fail although the server may well be back."""
        fileno = self.stream.socket.fileno()
        if fileno < 0:
            return False
        poller = select.poll()
        poller.register(fileno, select.POLLIN)
        return not poller.poll(0)


async def connect(address: RedisAddress) -> Connection:
    """A logged-in connection on the address's database. Cancellation: nothing is left
    open."""
    try:
        stream = await trio.open_tcp_stream(address.host, address.port)
    except OSError as exc:
        raise RedisUnavailable(f"cannot reach redis at {address.host}:{address.port}") from exc
    conn = Connection(stream)
    try:
        if address.password is not None:
            login = (
                (address.username, address.password) if address.username else (address.password,)
            )
            await conn.command("AUTH", *login)
        if address.db:
            await conn.command("SELECT", address.db)
    except BaseException:
        conn.close()
        raise
    return conn


@attrs.frozen
class Script:
    """A Lua script run by its SHA-1 (`EVALSHA`), sent whole once when the server lacks it."""

    source: str
    sha: str = attrs.field(init=False)

    @sha.default
    def _sha(self) -> str:
        return hashlib.sha1(self.source.encode()).hexdigest()


@attrs.define(eq=False)
class RedisClient:
    """A bounded pool of connections to one server.

    At most `max_connections` commands are in flight; more wait for a free connection.
    A connection is reused only after a complete reply; any interruption closes it.
    """

    address: RedisAddress
    max_connections: int = 32
    _idle: list[Connection] = attrs.field(factory=list, init=False)
    _slots: trio.Semaphore = attrs.field(init=False)
    _closed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        self._slots = trio.Semaphore(self.max_connections)

    @classmethod
    def from_url(cls, url: str, max_connections: int = 32) -> RedisClient:
        return cls(RedisAddress.parse(url), max_connections)

    async def execute(self, *args: bytes | str | int | float) -> Reply:
        """Run one command. Raises `RedisUnavailable` or `RedisReplyError`.

        Cancellation: the connection in use is closed (its reply is unknown)."""
        async with self._slots:
            if self._closed:
                raise RedisUnavailable("redis client closed")
            conn = self._take_idle() or await connect(self.address)
            try:
                reply = await conn.command(*args)
            except RedisReplyError:
                self._release(conn)  # the exchange completed; the connection is fine
                raise
            except BaseException:
                conn.close()
                raise
            self._release(conn)
            return reply

    def _take_idle(self) -> Connection | None:
        """The most recent idle connection still usable; dead ones are closed."""
        while self._idle:
            conn = self._idle.pop()
            if conn.idle_usable():
                return conn
            conn.close()
        return None

    def _release(self, conn: Connection) -> None:
        if self._closed:
            conn.close()
        else:
            self._idle.append(conn)

    async def run_script(
        self, script: Script, keys: list[str], args: list[bytes | str | int | float]
    ) -> Reply:
        """`EVALSHA`, falling back to `EVAL` when the server has not cached the script
        (a fresh or restarted server)."""
        try:
            return await self.execute("EVALSHA", script.sha, len(keys), *keys, *args)
        except RedisReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self.execute("EVAL", script.source, len(keys), *keys, *args)

    async def publish(self, channel: str, message: str) -> None:
        await self.execute("PUBLISH", channel, message)

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscription]:
        """A dedicated connection subscribed to `channel`, closed when the block ends."""
        conn = await connect(self.address)
        try:
            await conn.command("SUBSCRIBE", channel)
            yield Subscription(conn)
        finally:
            conn.close()

    def close(self) -> None:
        """Close every idle connection; commands still running close theirs when done."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


@attrs.define(eq=False)
class Subscription:
    """The messages published on a subscribed channel, as they arrive."""

    _conn: Connection

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> bytes:
        """The next message (an iterator, not an async generator: nothing to finalize
        when the caller stops early). Raises `RedisUnavailable` when the connection
        breaks."""
        while True:
            reply = await self._conn.read()
            if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
                payload = reply[2]
                if isinstance(payload, bytes):
                    return payload
