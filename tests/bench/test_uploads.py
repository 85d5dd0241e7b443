"""The upload benches' shared parts (`bench.uploads`): the streamed multipart body is a
well-formed form held a piece at a time, and the batch runs every upload at once while
sampling memory."""

from __future__ import annotations

import os
from email.parser import BytesParser
from email.policy import HTTP

import trio
from trio.testing import MockClock

from bench.uploads import sampled_batch, streamed_multipart


async def test_the_body_is_the_fields_then_the_file_streamed_in_pieces() -> None:
    body = streamed_multipart(
        "xyz", {"model": "m-1", "language": "en"}, ("a.wav", "audio/wav"),
        head=b"HEAD", piece=b"0123456789", size=25,
    )  # fmt: skip
    pieces = [piece async for piece in body]
    assert pieces[1:-1] == [b"0123456789", b"0123456789", b"01234"]
    raw = b"content-type: multipart/form-data; boundary=xyz\r\n\r\n" + b"".join(pieces)
    form = BytesParser(policy=HTTP).parsebytes(raw)
    parts = [(p.get_param("name", header="content-disposition"), p) for p in form.iter_parts()]
    assert [(name, part.get_content()) for name, part in parts[:2]] == [
        ("model", "m-1"),
        ("language", "en"),
    ]
    name, file = parts[2]
    assert (name, file.get_filename(), file.get_content_type()) == ("file", "a.wav", "audio/wav")
    assert file.get_payload(decode=True) == b"HEAD" + b"0123456789" * 2 + b"01234"


async def test_the_batch_runs_every_upload_at_once(autojump_clock: MockClock) -> None:
    spans: list[tuple[float, float]] = []

    async def one() -> None:
        started = trio.current_time()
        await trio.sleep(1)
        spans.append((started, trio.current_time()))

    _, most = await sampled_batch(os.getpid(), 3, one)
    assert spans == [(0.0, 1.0)] * 3
    assert most > 0  # this process's RSS, in KiB
