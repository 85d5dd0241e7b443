"""Gemini's answers in canonical terms: whole responses, stream events, vectors, models."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from providers.errors import (
    ContentFiltered,
    StreamInterrupted,
)
from providers.google.errors import stream_error
from providers.types import (
    ChatChoice,
    ChatChunk,
    ChatResult,
    TokenLogprob,
    ToolCall,
    ToolCallDelta,
    Usage,
    result_of_choices,
)

FINISH_REASONS: Mapping[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
"""Gemini finish reasons with a canonical counterpart; any other one (OTHER,
MALFORMED_FUNCTION_CALL, LANGUAGE, ...) ends the answer as `stop`."""


def parse_usage(data: Mapping[str, Any] | None) -> Usage:
    """`usageMetadata` as canonical usage; thinking tokens are billed as output, so they
    count as completion tokens."""
    if not data:
        return Usage()
    completion = int(data.get("candidatesTokenCount") or 0)
    completion += int(data.get("thoughtsTokenCount") or 0)
    return Usage(int(data.get("promptTokenCount") or 0), completion)


def map_finish_reason(reason: str | None, has_calls: bool) -> str:
    canonical = FINISH_REASONS.get(reason or "STOP", "stop")
    return "tool_calls" if has_calls and canonical == "stop" else canonical


def check_prompt_blocked(data: Mapping[str, Any], provider: str) -> None:
    """Raise `ContentFiltered` when Gemini refused the prompt itself (no candidates)."""
    reason = (data.get("promptFeedback") or {}).get("blockReason")
    if reason and not data.get("candidates"):
        raise ContentFiltered(
            provider, f"the prompt was blocked by the upstream: {reason}", filter_reason=reason
        )


def tool_call_id(call: Mapping[str, Any], index: int) -> str:
    """The call's own id when the model gave one, else `call_<index>` (most Gemini models
    give none, and the gateway's clients need one to answer the call)."""
    return str(call.get("id") or f"call_{index}")


def parse_generate(data: Mapping[str, Any], model: str, *, provider: str = "google") -> ChatResult:
    """A `GenerateContentResponse` as a `ChatResult`, every candidate a choice."""
    check_prompt_blocked(data, provider)
    candidates = data.get("candidates") or [{}]
    return result_of_choices(
        str(data.get("responseId") or ""),
        str(data.get("modelVersion") or model),
        [_choice(candidate, n) for n, candidate in enumerate(candidates)],
        parse_usage(data.get("usageMetadata")),
    )


def _choice(candidate: Mapping[str, Any], position: int) -> ChatChoice:
    parts = (candidate.get("content") or {}).get("parts") or ()
    texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
    calls = tuple(
        ToolCall(
            id=tool_call_id(p["functionCall"], n),
            name=p["functionCall"].get("name", ""),
            arguments=json.dumps(p["functionCall"].get("args") or {}),
        )
        for n, p in enumerate(p for p in parts if "functionCall" in p)
    )
    return ChatChoice(
        index=int(candidate.get("index", position)),
        content="".join(texts) if texts else None,
        finish_reason=map_finish_reason(candidate.get("finishReason"), bool(calls)),
        tool_calls=calls,
        logprobs=token_logprobs(candidate.get("logprobsResult")),
    )


def token_logprobs(result: Mapping[str, Any] | None) -> tuple[TokenLogprob, ...] | None:
    """Gemini's `logprobsResult` (the chosen tokens, and the top candidates at each step)
    in the chat-completions shape."""
    if not result:
        return None
    chosen = result.get("chosenCandidates") or ()
    tops = result.get("topCandidates") or ()
    entries = []
    for step, token in enumerate(chosen):
        alternatives = (tops[step].get("candidates") or ()) if step < len(tops) else ()
        entries.append({**_logprob(token), "top_logprobs": [_logprob(t) for t in alternatives]})
    return tuple(entries)


def _logprob(candidate: Mapping[str, Any]) -> dict[str, Any]:
    token = str(candidate.get("token") or "")
    return {
        "token": token,
        "logprob": float(candidate.get("logProbability") or 0.0),
        "bytes": list(token.encode()),
    }


@attrs.define
class StreamTranslator:
    """Turns the events of a `streamGenerateContent?alt=sse` answer into canonical chunks.

    Pure and I/O-free: `feed` takes each event's decoded JSON, `close` is called at the
    end of the stream. Text and whole function calls are passed on as they come, for
    each candidate (one per `n`); the finish reasons and usage are kept until `close`,
    because Gemini repeats (growing) usage on every event and only the last one is final.
    """

    provider: str = "google"
    _calls: dict[int, int] = attrs.Factory(dict)
    _finish: dict[int, str] = attrs.Factory(dict)
    _usage: Usage | None = None

    def feed(self, data: Mapping[str, Any]) -> list[ChatChunk]:
        if "error" in data:
            raise stream_error(self.provider, data)
        check_prompt_blocked(data, self.provider)
        if data.get("usageMetadata"):
            self._usage = parse_usage(data["usageMetadata"])
        chunks: list[ChatChunk] = []
        for position, candidate in enumerate(data.get("candidates") or ()):
            index = int(candidate.get("index", position))
            self._calls.setdefault(index, 0)
            parts = (candidate.get("content") or {}).get("parts") or ()
            chunks.extend(c for c in (self._chunk(index, part) for part in parts) if c)
            logprobs = token_logprobs(candidate.get("logprobsResult"))
            if logprobs:
                chunks.append(ChatChunk(index=index, logprobs=logprobs))
            if candidate.get("finishReason"):
                self._finish[index] = candidate["finishReason"]
        return chunks

    def _chunk(self, index: int, part: Mapping[str, Any]) -> ChatChunk | None:
        if "functionCall" in part:
            call = part["functionCall"]
            ordinal = self._calls[index]
            delta = ToolCallDelta(
                index=ordinal,
                id=tool_call_id(call, ordinal),
                name=call.get("name", ""),
                arguments=json.dumps(call.get("args") or {}),
            )
            self._calls[index] += 1
            return ChatChunk(tool_calls=(delta,), index=index)
        if part.get("text") and not part.get("thought"):
            return ChatChunk(content=part["text"], index=index)
        return None

    def close(self) -> list[ChatChunk]:
        """The final chunks, one finish per candidate (the usage on the last); a stream in
        which a candidate never said why it finished was cut short."""
        if not self._finish or set(self._calls) - set(self._finish):
            raise StreamInterrupted(self.provider, "the upstream stream ended before finishing")
        indices = sorted(self._finish)
        return [
            ChatChunk(
                finish_reason=map_finish_reason(self._finish[i], self._calls.get(i, 0) > 0),
                usage=self._usage if i == indices[-1] else None,
                index=i,
            )
            for i in indices
        ]


def parse_vectors(data: Mapping[str, Any]) -> list[list[float]]:
    """The vectors of a `batchEmbedContents` (or `embedContent`) answer, in input order."""
    if "embedding" in data:
        return [[float(x) for x in data["embedding"].get("values") or ()]]
    return [[float(x) for x in item.get("values") or ()] for item in data.get("embeddings") or ()]


def estimate_tokens(texts: Iterable[str]) -> int:
    """About four characters a token: the Gemini API reports no usage for embeddings, and
    the gateway still needs a number to bill and rate-limit by."""
    return sum(max(1, math.ceil(len(text) / 4)) for text in texts)


def parse_model_ids(data: Mapping[str, Any]) -> list[str]:
    return [str(m["name"]).removeprefix("models/") for m in data.get("models") or () if "name" in m]
