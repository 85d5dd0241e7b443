"""Structured logs: one JSON object per line with the request's facts, and never a key or
a prompt unless the debug setting asks for bodies."""

from __future__ import annotations

import io
import logging
import time
from typing import Any

import httpx
import openai
import trio

from gateway.app.server import RunningGateway
from gateway.operator.logs import (
    LOG_FLUSH_S,
    BatchedHandler,
    TextFormatter,
    batched_logs,
    configure_logging,
    redact,
    redact_json,
    sole_batch,
)
from store.workspaces import DEFAULT_WORKSPACE_ID
from tests.operator.conftest import ADMIN_KEY
from tests.operator.log_capture import access, lines, log_stream

PROMPT = "The secret plans of the purple octopus"
WRONG_KEY = "gw_admin_not_a_real_key_0123456789abcdef"
__all__ = ["log_stream"]  # the fixture


async def exercise(gateway: RunningGateway, client: openai.AsyncOpenAI) -> str:
    """A chat answer, a streamed one, a refused key and a management call; the chat's id."""
    messages = [{"role": "user", "content": PROMPT}]
    answer = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini",
        messages=messages,  # type: ignore[arg-type]
    )
    stream = await client.chat.completions.create(
        model="claude-haiku-4-5",
        messages=messages,
        stream=True,  # type: ignore[arg-type]
    )
    async for _ in stream:
        pass
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as other:
        headers = {"authorization": f"Bearer {WRONG_KEY}"}
        refused = await other.post("/v1/chat/completions", headers=headers, json={})
        assert refused.status_code == 401
        listed = await other.get(
            "/v1/management/api-keys", headers={"authorization": f"Bearer {ADMIN_KEY}"}
        )
        assert listed.status_code == 200
    return answer.headers["x-request-id"]


async def test_every_request_is_one_json_line_with_its_facts(
    gateway: RunningGateway, client: openai.AsyncOpenAI, log_stream: io.StringIO
) -> None:
    request_id = await exercise(gateway, client)
    entries = access(log_stream)
    chat = next(e for e in entries if e["request_id"] == request_id)
    assert chat["route"] == "/v1/chat/completions"
    assert chat["method"] == "POST"
    assert chat["family"] == "chat"
    assert chat["status"] == 200
    assert chat["provider"] == "openai"
    assert chat["workspace_id"] == DEFAULT_WORKSPACE_ID
    assert chat["latency_ms"] > 0
    streamed = [e for e in entries if e["stream"]]
    assert [(e["provider"], e["status"]) for e in streamed] == [("anthropic", 200)]
    assert any(e["status"] == 401 and e["workspace_id"] is None for e in entries)
    assert any(e["route"] == "/v1/management/api-keys" and e["status"] == 200 for e in entries)


async def test_no_key_and_no_prompt_in_the_logs(
    gateway: RunningGateway, client: openai.AsyncOpenAI, log_stream: io.StringIO
) -> None:
    await exercise(gateway, client)
    logging.getLogger("gateway.test").warning("client sent %s", WRONG_KEY)
    text = log_stream.getvalue()
    assert text
    assert ADMIN_KEY not in text
    assert WRONG_KEY not in text
    assert "octopus" not in text


def test_redaction_covers_the_usual_key_shapes() -> None:
    for secret in (ADMIN_KEY, "sk-proj-abcdefghijkl", "AIzaSyA1234567890abcdefghijk"):
        assert redact(f"x {secret} y") == "x [redacted] y"
    assert redact("Authorization: Bearer abc.def-ghi_jkl") == "Authorization: [redacted]"
    assert redact("nothing to hide") == "nothing to hide"


async def test_gateway_serve_writes_its_lines_in_batches(autojump_clock: Any) -> None:
    """`gateway serve` holds each line for the flush task (no write per answer); a
    warning takes what is held with it, and the end of the server writes the rest."""
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_logging("json", stream=stream, batched=True)
    access = logging.getLogger("gateway.access")
    try:
        async with batched_logs():
            access.info("request", extra={"fields": {"status": 200, "key": ADMIN_KEY}})
            assert stream.getvalue() == ""  # held, not written by the request
            await trio.sleep(LOG_FLUSH_S * 1.5)
            assert [line["status"] for line in lines(stream)] == [200]
            access.info("request", extra={"fields": {"status": 201}})
            logging.getLogger("gateway.test").warning("client sent %s", WRONG_KEY)
            assert [line.get("status") for line in lines(stream)] == [200, 201, None]
            access.info("request", extra={"fields": {"status": 202}})
        assert [line.get("status") for line in lines(stream)][-1] == 202  # the end's flush
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert ADMIN_KEY not in stream.getvalue() and WRONG_KEY not in stream.getvalue()


async def test_a_line_held_without_a_record_is_the_line_a_record_makes(
    client: openai.AsyncOpenAI,
) -> None:
    """When the batched handler alone hears the access log (as under `gateway serve`),
    the middleware holds each line's parts, no `LogRecord`: the line written is the one
    a record makes (same fields, same order), redacted the same way. Another handler
    on the root (here a second one) brings records back, so that it sees every line."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    handler = configure_logging("json", stream=stream, batched=True)
    access_logger = logging.getLogger("gateway.access")
    # A client's id that is no valid id (spaces) and holds a key: logged, redacted.
    sent_id = f"Bearer {WRONG_KEY}"

    async def ask(n: int) -> None:  # not the same question twice: no cache hit
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"{PROMPT} {n}"}],
            extra_headers={"X-Request-ID": sent_id},
        )

    try:
        root.handlers = [handler]  # what `gateway serve` has: pytest's capture set aside
        assert sole_batch(access_logger) is handler
        await ask(1)
        root.addHandler(logging.NullHandler())  # another listener: records again
        assert sole_batch(access_logger) is None
        await ask(2)
        handler.flush()
    finally:
        root.handlers = saved
        root.setLevel(level)
    held, recorded = access(stream)
    assert list(held) == list(recorded)  # the same fields in the same order
    for line in (held, recorded):
        assert line["client_request_id"] == "[redacted]"
        assert (line["status"], line["provider"], line["model"]) == (200, "openai", "gpt-4o-mini")
    changing = {"ts", "request_id", "latency_ms", "upstream_ms"}
    assert {k: v for k, v in held.items() if k not in changing} == {
        k: v for k, v in recorded.items() if k not in changing
    }
    assert WRONG_KEY not in stream.getvalue() and "octopus" not in stream.getvalue()


def test_a_held_line_renders_through_any_formatter() -> None:
    """The text format (or any formatter but JSON's) gets a record made at the flush."""
    stream = io.StringIO()
    handler = BatchedHandler(stream)
    formatter = TextFormatter()
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    handler.hold_line((1_700_000_000.25, "gateway.access", "request", {"status": 200}))
    handler.flush()
    assert stream.getvalue() == "2023-11-14 22:13:20,250 INFO gateway.access: request status=200\n"


def test_json_redaction_skips_only_what_cannot_match() -> None:
    """`redact_json` finds what `redact` finds in a JSON line: a bearer token needs
    whitespace, a space or a character beyond ASCII in such a line."""
    for text in (
        '{"a":"Bearer abcdefghijk"}',
        '{"a":"BEARER\u2003abcdefghijk"}',
        '{"a":"x","b":"sk-abcdefghijkl"}',
        '{"a":"bearer\\tabcdefghijk"}',  # an escaped tab: no whitespace, no token
        '{"a":"bearerabcdefghijk"}',
        '{"a":"naïve"}',
    ):
        assert redact_json(text) == redact(text), text
