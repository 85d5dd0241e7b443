"""Structured logs: one JSON object per line with the request's facts, and never a key or
a prompt unless the debug setting asks for bodies."""

from __future__ import annotations

import io
import logging
from typing import Any

import httpx
import openai
import trio

from gateway.app.server import RunningGateway
from gateway.operator.logs import LOG_FLUSH_S, batched_logs, configure_logging, redact
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
