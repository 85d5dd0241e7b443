"""The requests of the fault soak (`bench.faults`), one per endpoint family, and how an
answer is judged: success, fallback, a spec error envelope, a stream ended by an error
event, or a violation (anything a client could not rely on).

Violations: a transport error or no answer within the deadline (hung), a 200 whose body
is broken, a stream that stops without `[DONE]` or an error event (silent truncation), an
error that is not the spec's envelope.
"""

from __future__ import annotations

import io
import json
import time
import wave
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import httpx
import trio

# The provider a family's model is served by first: another one answering is a fallback.
PRIMARY = {
    "chat": "openai",
    "chat_stream": "openai",
    "embeddings": "openai",
    "rerank": "cohere",
    "speech": "openai",
    "transcription": "openai",
    "ocr": "mistral",
    "files": "",
}
VIOLATIONS = frozenset(
    {"hung", "transport_error", "broken_body", "silent_truncation", "bad_error", "bad_event"}
)
CHAT = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Say something under faults."}],
    "service": {"cache": "skip"},
    "max_tokens": 12,
}


@attrs.frozen
class Outcome:
    family: str
    kind: str  # success, fallback, error_envelope, stream_error_event, or a violation
    seconds: float
    detail: str = ""

    @property
    def violation(self) -> bool:
        return self.kind in VIOLATIONS


Request = Callable[[httpx.AsyncClient], Awaitable[tuple[str, str]]]


def _error_kind(answer: httpx.Response) -> tuple[str, str]:
    """A refusal must be the spec's envelope: {error: {message, type, code}}."""
    try:
        error = answer.json()["error"]
        assert error["message"] and error["type"] and "code" in error
    except (ValueError, KeyError, TypeError, AssertionError):
        return "bad_error", f"{answer.status_code}: {answer.text[:200]}"
    return "error_envelope", f"{answer.status_code} {error['code']}"


def _served(family: str, answer: httpx.Response, provider: str | None = None) -> tuple[str, str]:
    used = provider or answer.headers.get("x-service-model-used", "").split("/")[0]
    primary = PRIMARY[family]
    if primary and used and used != primary:
        return "fallback", used
    return "success", used


async def chat(client: httpx.AsyncClient) -> tuple[str, str]:
    answer = await client.post("/v1/chat/completions", json=CHAT)
    if answer.status_code != 200:
        return _error_kind(answer)
    try:
        body = answer.json()
        assert body["choices"][0]["message"]["content"] is not None
    except (ValueError, KeyError, AssertionError):
        return "broken_body", answer.text[:200]
    return _served("chat", answer, body.get("service", {}).get("provider"))


async def chat_stream(client: httpx.AsyncClient) -> tuple[str, str]:
    async with client.stream("POST", "/v1/chat/completions", json=CHAT | {"stream": True}) as a:
        if a.status_code != 200:
            await a.aread()
            return _error_kind(a)
        events = [line async for line in a.aiter_lines() if line.startswith("data: ")]
    return judge_stream(events)


def judge_stream(events: list[str]) -> tuple[str, str]:
    """A relayed stream ends with `[DONE]` or with an error event; every event is JSON."""
    provider = ""
    for index, event in enumerate(events):
        if event == "data: [DONE]":
            return ("success" if provider in ("", "openai") else "fallback"), provider
        try:
            frame = json.loads(event[6:])
        except ValueError:
            return "bad_event", event[:200]
        if "error" in frame:
            rest = events[index + 1 :]
            if rest and rest != ["data: [DONE]"]:
                return "bad_event", "events after the error event"
            error = frame["error"]
            return "stream_error_event", str(error.get("code"))
        provider = frame.get("service", {}).get("provider", provider)
    return "silent_truncation", f"{len(events)} events, no [DONE] and no error event"


async def embeddings(client: httpx.AsyncClient) -> tuple[str, str]:
    body = {"model": "text-embedding-3-small", "input": ["fault soak", "second input"]}
    answer = await client.post("/v1/embeddings", json=body | {"service": {"cache": "skip"}})
    if answer.status_code != 200:
        return _error_kind(answer)
    try:
        assert len(answer.json()["data"]) == 2
    except (ValueError, KeyError, AssertionError):
        return "broken_body", answer.text[:200]
    return _served("embeddings", answer)


async def rerank(client: httpx.AsyncClient) -> tuple[str, str]:
    body = {"model": "rerank-v3.5", "query": "faults", "documents": ["a fault", "a song"]}
    answer = await client.post("/v1/rerank", json=body)
    if answer.status_code != 200:
        return _error_kind(answer)
    try:
        assert len(answer.json()["results"]) == 2
    except (ValueError, KeyError, AssertionError):
        return "broken_body", answer.text[:200]
    return _served("rerank", answer)


async def speech(client: httpx.AsyncClient) -> tuple[str, str]:
    """Speech streams by default: once its head is out, a vendor failing mid-audio can
    only end the body early, and the gateway closes the connection without the chunked
    body's end, so the client hears of it ("aborted"), as from OpenAI's own stream; a body
    that ended cleanly yet is not whole audio would be a silent truncation."""
    body = {"model": "tts-1", "voice": "alloy", "input": "Faults.", "response_format": "wav"}
    async with client.stream("POST", "/v1/audio/speech", json=body) as answer:
        if answer.status_code != 200:
            await answer.aread()
            return _error_kind(answer)
        try:
            await answer.aread()
        except httpx.TransportError as exc:  # after a 200 head: a mid-audio failure
            return "aborted", f"the audio ended early, the client told: {exc!r}"
    if not _is_wav(answer.content):
        return "broken_body", f"{len(answer.content)} bytes that are not a WAV file"
    return _served("speech", answer)


def _is_wav(data: bytes) -> bool:
    try:
        with wave.open(io.BytesIO(data), "rb") as audio:
            return audio.getnframes() > 0
    except (wave.Error, EOFError):
        return False


def silence_wav(seconds: float = 0.5) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(16_000)
        audio.writeframes(b"\0\0" * int(16_000 * seconds))
    return out.getvalue()


async def transcription(client: httpx.AsyncClient) -> tuple[str, str]:
    files = {"file": ("a.wav", silence_wav())}
    answer = await client.post("/v1/audio/transcriptions", files=files, data={"model": "whisper-1"})
    if answer.status_code != 200:
        return _error_kind(answer)
    try:
        assert isinstance(answer.json()["text"], str)
    except (ValueError, KeyError, AssertionError):
        return "broken_body", answer.text[:200]
    return _served("transcription", answer)


def ocr_request(document: bytes) -> Request:
    async def ocr(client: httpx.AsyncClient) -> tuple[str, str]:
        files = {"file": ("doc.pdf", document)}
        answer = await client.post("/v1/ocr", files=files, data={"model": "mistral-ocr-latest"})
        if answer.status_code != 200:
            return _error_kind(answer)
        try:
            provider = str(answer.json()["_gateway"]["provider"])
        except (ValueError, KeyError):
            return "broken_body", answer.text[:200]
        return _served("ocr", answer, provider)

    return ocr


async def files(client: httpx.AsyncClient) -> tuple[str, str]:
    """Upload, read back, delete: no upstream, but it shares the process under faults."""
    data = b"bytes kept through a fault soak\n" * 64
    created = await client.post(
        "/v1/files", files={"file": ("f.txt", data)}, data={"purpose": "assistants"}
    )
    if created.status_code >= 300:
        return _error_kind(created)
    file_id = created.json()["id"]
    content = await client.get(f"/v1/files/{file_id}/content")
    await client.delete(f"/v1/files/{file_id}")
    if content.content != data:
        return "broken_body", "the file's bytes changed"
    return "success", ""


async def timed(
    family: str, request: Request, client: httpx.AsyncClient, deadline: float
) -> Outcome:
    """One request under the soak's deadline, judged."""
    started = time.perf_counter()
    with trio.move_on_after(deadline) as scope:
        try:
            kind, detail = await request(client)
        except httpx.TransportError as exc:
            kind, detail = "transport_error", f"{type(exc).__name__}: {exc}"
    if scope.cancelled_caught:
        kind, detail = "hung", f"no answer within {deadline} s"
    return Outcome(family, kind, time.perf_counter() - started, detail)


def requests_by_family(document: bytes) -> dict[str, Request]:
    return {
        "chat": chat,
        "chat_stream": chat_stream,
        "embeddings": embeddings,
        "rerank": rerank,
        "speech": speech,
        "transcription": transcription,
        "ocr": ocr_request(document),
        "files": files,
    }


def outcome_counts(outcomes: list[Outcome]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
    return counts


def detail_of(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    return [attrs.asdict(o) for o in outcomes if o.violation][:20]
