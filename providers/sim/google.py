"""The simulated Google Gemini API (Generative Language API, v1beta).

Routes (under the server's `/google` prefix): `POST /v1beta/models/{model}:generateContent`,
`:streamGenerateContent` (`?alt=sse`: one `GenerateContentResponse` per SSE event, as the
google-genai SDK asks for; without it a JSON array streamed element by element, the
REST default), `:countTokens`, and
`GET /v1beta/models` and `/v1beta/models/{model}` (embeddings are
`providers.sim.google_embed`'s, speech `google_tts`'s and `google_stt`'s). Bodies follow
the public wire format closely enough for the official `google-genai` SDK; text, token
counts, tool arguments and pacing come from `providers.sim.content` through the
`SimContext`, so the answer matches the other simulated vendors' for the same question.

Conventions:

- Every route is served under `/v1` as well, which recent google-genai SDKs use by
  default with the same wire format.
- Authentication: an `x-goog-api-key` header or a `key` query parameter; without one,
  403 PERMISSION_DENIED (as Google answers unregistered callers); the key `invalid`
  gets Google's 400 INVALID_ARGUMENT with reason API_KEY_INVALID.
- A model whose id starts with `unknown` is 404 NOT_FOUND; any other id is served.
- The reply is the context's deterministic text for the whole conversation, cut at
  `generationConfig.maxOutputTokens` (then `finishReason` is MAX_TOKENS, else STOP).
- The model answers with one `functionCall` when tools are given and the last turn is a
  user turn without `functionResponse` parts, or when `toolConfig` forces a call (mode
  ANY, with `allowedFunctionNames` naming the function); mode NONE never calls.

Fault conventions (a `Fault` from `POST /_sim/faults` or the `x-sim-fault` header):

- `delay_ms`: wait that long before answering;
- `status`: answer with that HTTP status and Google's error body
  `{"error": {code, message, status, details}}`, the status name following the code
  (400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND,
  429 RESOURCE_EXHAUSTED with a RetryInfo detail, 500 INTERNAL, 503 UNAVAILABLE,
  504 DEADLINE_EXCEEDED); `code` `context_length_exceeded` gives Google's "input token
  count exceeds the maximum" message, any other `code` becomes the ErrorInfo reason;
- `code` `safety` (no status): a candidate with `finishReason` SAFETY, safety ratings
  and no content; `code` `prompt_blocked`: no candidates and
  `promptFeedback.blockReason` SAFETY;
- `stop_after_chunks`: a stream drops the connection after that many events (or stalls
  `stall_ms`, then goes on).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import attrs

from providers.sim import content
from providers.sim.catalog_models import merged
from providers.sim.core import Fault, Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import MODEL_LIST, apply_fault
from providers.sim.google_terms import answer_schema, declarations, tool_choice
from providers.types import ToolCall

VENDOR = "google"
CONTEXT_LIMIT = 1_048_576
MAX_OUTPUT_TOKENS = 65_536
CHAT_MODELS = merged(
    ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash"),
    "google",
    ("chat",),
)
EMBEDDING_MODELS = merged(("gemini-embedding-001", "text-embedding-004"), "google", ("embedding",))
_COMPACT = (",", ":")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FAULT_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: "Request had invalid authentication credentials.",
    403: "The caller does not have permission",
    404: "models/{model} is not found for API version v1beta.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
    504: "The request timed out. Please try again.",
}
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
]


class GoogleError(Exception):
    """An error answer in Google's shape: `{"error": {code, message, status, details}}`."""

    def __init__(
        self, code: int, message: str, *, details: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.body = {
            "error": {
                "code": code,
                "message": message,
                "status": _STATUS_NAMES.get(code, "UNKNOWN"),
                **({"details": list(details)} if details else {}),
            }
        }

    def response(self) -> SimResponse:
        return SimResponse.of_json(self.body, status=self.code)


def fault_error(fault: Fault, model: str) -> GoogleError:
    """The error a status fault produces, shaped and worded as Google's for that code."""
    status = fault.status or 500
    message = fault.message or _FAULT_MESSAGES.get(status, "Error.").format(model=model)
    details: list[dict[str, Any]] = []
    if fault.code == "context_length_exceeded":
        message = fault.message or (
            f"The input token count ({CONTEXT_LIMIT + 1}) exceeds the maximum number of "
            f"tokens allowed ({CONTEXT_LIMIT})."
        )
    elif fault.code:
        details.append({"@type": _ERROR_INFO, "reason": fault.code, "domain": "googleapis.com"})
    if status == 429:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"})
    return GoogleError(status, message, details=details)


def check_auth(request: SimRequest) -> None:
    key = request.headers.get("x-goog-api-key") or request.query.get("key") or ""
    if not key.strip():
        raise GoogleError(
            403,
            "Method doesn't allow unregistered callers (callers without established "
            "identity). Please use API Key or other form of API consumer identity to call "
            "this API.",
        )
    if key == "invalid":
        reason = {"@type": _ERROR_INFO, "reason": "API_KEY_INVALID", "domain": "googleapis.com"}
        raise GoogleError(400, "API key not valid. Please pass a valid API key.", details=[reason])


def parse_body(request: SimRequest) -> dict[str, Any]:
    try:
        body = request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise GoogleError(400, "Invalid JSON payload received.")
    return body


def check_model(request: SimRequest) -> str:
    model = request.path_params["model"]
    if model.startswith("unknown"):
        raise GoogleError(404, f"models/{model} is not found for API version v1beta.")
    return model


# --- generateContent ---------------------------------------------------------------


@attrs.frozen(slots=True)
class Plan:
    """The answer decided before any of it is sent: text tokens, one call, or a block."""

    model: str
    response_id: str
    prompt_tokens: int
    tokens: list[str]
    tool_call: ToolCall | None
    finish_reason: str
    blocked: str | None = None  # "safety" or "prompt_blocked"
    more: tuple[content.ChoicePlan, ...] = ()  # the other candidates (`candidateCount`)
    top_logprobs: int | None = None  # `responseLogprobs` asked: alternatives per token

    @property
    def completion_tokens(self) -> int:
        if self.tool_call is not None:
            first = content.count_tokens(self.tool_call.name + self.tool_call.arguments)
        else:
            first = len(self.tokens)
        return first + sum(choice.completion_tokens for choice in self.more)


def turn_text(turn: Mapping[str, Any]) -> str:
    """The text of a turn: its text parts, and call arguments and results as JSON."""
    texts: list[str] = []
    for part in turn.get("parts") or ():
        if not isinstance(part, dict):
            continue
        if "text" in part:
            texts.append(str(part["text"]))
        elif "functionCall" in part:
            texts.append(json.dumps(part["functionCall"].get("args") or {}))
        elif "functionResponse" in part:
            texts.append(json.dumps(part["functionResponse"].get("response") or {}))
    return " ".join(texts)


def inline_notes(body: Mapping[str, Any]) -> list[str]:
    """Each `inlineData` part that is not an image, by its MIME type (`document
    application/pdf`): what a document reached Gemini as."""
    notes: list[str] = []
    for turn in body.get("contents") or ():
        for part in (turn or {}).get("parts") or () if isinstance(turn, dict) else ():
            inline = part.get("inlineData") if isinstance(part, dict) else None
            mime = str((inline or {}).get("mimeType") or "")
            if mime and not mime.startswith("image/"):
                notes.append(f"document {mime}")
    return notes


def _contents(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise GoogleError(400, "* GenerateContentRequest.contents: contents is not specified")
    return [turn if isinstance(turn, dict) else {} for turn in contents]


def _max_tokens(body: Mapping[str, Any]) -> int | None:
    value = (body.get("generationConfig") or {}).get("maxOutputTokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GoogleError(400, "* GenerateContentRequest.generation_config.max_output_tokens")
    return min(value, MAX_OUTPUT_TOKENS)


def plan_generate(
    body: Mapping[str, Any], model: str, ctx: SimContext, fault: Fault | None
) -> Plan:
    """Decide the whole answer: its tokens (or function call), usage and finish reason."""
    contents = _contents(body)
    system = body.get("systemInstruction")
    texts = ([turn_text(system)] if isinstance(system, dict) else []) + [
        turn_text(turn) for turn in contents
    ]
    prompt = "\n".join(texts)
    functions = declarations(body.get("tools"))
    prompt_tokens = content.count_prompt_tokens(texts)
    if functions:
        prompt_tokens += content.count_tokens(json.dumps(functions))
    if prompt_tokens > CONTEXT_LIMIT:
        raise GoogleError(
            400,
            f"The input token count ({prompt_tokens}) exceeds the maximum number of tokens "
            f"allowed ({CONTEXT_LIMIT}).",
        )
    response_id = os.urandom(12).hex()
    blocked = fault.code if fault and fault.code in ("safety", "prompt_blocked") else None
    if blocked:
        return Plan(model, response_id, prompt_tokens, [], None, "SAFETY", blocked)
    config = _config(body)
    first, *more = (
        _candidate(body, contents[-1], functions, ctx, content.choice_prompt(prompt, i), i)
        for i in range(config.get("candidateCount", 1))
    )
    top = config.get("logprobs", 0) if config.get("responseLogprobs") else None
    return Plan(
        model, response_id, prompt_tokens, first.tokens, first.tool_call,
        first.finish_reason, more=tuple(more), top_logprobs=top,
    )  # fmt: skip


GENERATION_KEYS = frozenset(
    {
        "temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "stopSequences",
        "responseLogprobs", "logprobs", "presencePenalty", "frequencyPenalty", "seed",
        "responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig",
        "responseModalities", "speechConfig", "mediaResolution",
    }
)  # fmt: skip
THINKING_LEVELS = frozenset({"MINIMAL", "LOW", "MEDIUM", "HIGH", "XHIGH"})
MAX_CANDIDATES = 8
MAX_LOGPROBS = 20


def _config(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """`generationConfig`, checked as Gemini checks it: known fields only (an unknown one
    is "Invalid JSON payload received"), `candidateCount` 1-8, `logprobs` 0-20 and only
    with `responseLogprobs`, a `thinkingConfig` with a budget or a level, not both."""
    config = body.get("generationConfig") or {}
    for name in config:
        if name not in GENERATION_KEYS:
            raise GoogleError(
                400,
                f"Invalid JSON payload received. Unknown name \"{name}\" at 'generation_config'",
            )
    count = config.get("candidateCount", 1)
    if not isinstance(count, int) or not 1 <= count <= MAX_CANDIDATES:
        raise GoogleError(400, "* GenerateContentRequest.generation_config.candidate_count")
    logprobs = config.get("logprobs")
    if logprobs is not None and (
        not config.get("responseLogprobs") or not 0 <= logprobs <= MAX_LOGPROBS
    ):
        raise GoogleError(400, "logprobs must be set with responseLogprobs, from 0 to 20")
    _check_thinking(config.get("thinkingConfig"))
    return config


def _check_thinking(thinking: Any) -> None:
    if thinking is None:
        return
    budget, level = thinking.get("thinkingBudget"), thinking.get("thinkingLevel")
    if budget is not None and level is not None:
        raise GoogleError(400, "You cannot set both thinking_level and thinking_budget.")
    if budget is not None and (not isinstance(budget, int) or budget < -1):
        raise GoogleError(400, "* GenerateContentRequest.generation_config.thinking_config")
    if level is not None and str(level).upper() not in THINKING_LEVELS:
        raise GoogleError(400, f"Invalid value at 'thinking_level' ({level})")


def _candidate(
    body: Mapping[str, Any],
    last: Mapping[str, Any],
    functions: list[dict[str, Any]],
    ctx: SimContext,
    prompt: str,
    index: int,
) -> content.ChoicePlan:
    call = _tool_call(functions, body.get("toolConfig"), last, prompt)
    max_tokens = _max_tokens(body)
    tokens = [] if call else ctx.reply_tokens(prompt, max_tokens, answer_schema(body))
    if tokens:
        tokens = content.received(inline_notes(body)) + tokens
    stops = content.stop_sequences((body.get("generationConfig") or {}).get("stopSequences"))
    tokens, stopped = content.cut_at_stop(tokens, stops)
    finish = "MAX_TOKENS" if call is None and max_tokens and not stopped else "STOP"
    return content.ChoicePlan(index, tokens, call, finish)


def _tool_call(
    functions: list[dict[str, Any]], tool_config: Any, last: Mapping[str, Any], prompt: str
) -> ToolCall | None:
    parts = [p for p in last.get("parts") or () if isinstance(p, dict)]
    answered = any("functionResponse" in part for part in parts)
    last_role = "tool" if answered or last.get("role") == "model" else "user"
    choice = tool_choice(tool_config)
    if not content.wants_tool_call(functions, choice, last_role):
        return None
    function = content.pick_tool(functions, choice, prompt)
    if function is None:
        raise GoogleError(
            400,
            "* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names",
        )
    return content.plan_tool_call(function, prompt)


def usage_json(plan: Plan, completion_tokens: int | None = None) -> dict[str, Any]:
    """`usageMetadata`; `completion_tokens` None leaves the candidates count out, as
    Google does on the events before the last one."""
    usage: dict[str, Any] = {"promptTokenCount": plan.prompt_tokens}
    total = plan.prompt_tokens
    if completion_tokens is not None:
        usage["candidatesTokenCount"] = completion_tokens
        total += completion_tokens
    usage["totalTokenCount"] = total
    usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": plan.prompt_tokens}]
    return usage


def response_json(
    plan: Plan,
    parts: list[dict[str, Any]] | None,
    finish: str | None,
    usage: dict[str, Any],
    tokens: list[str] | None = None,
) -> dict[str, Any]:
    """One `GenerateContentResponse`: the whole answer, or one event of a stream. `tokens`
    are the first candidate's tokens in it (their log-probabilities, when asked); the
    other candidates come whole with the first one's finish."""
    if plan.blocked == "prompt_blocked":
        feedback = {"blockReason": "SAFETY", "safetyRatings": _SAFETY_RATINGS}
        return {"promptFeedback": feedback, "usageMetadata": usage, "modelVersion": plan.model}
    candidate: dict[str, Any] = {}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    if plan.blocked:
        candidate["safetyRatings"] = _SAFETY_RATINGS
    candidate["index"] = 0
    if tokens is not None and plan.top_logprobs is not None:
        candidate["logprobsResult"] = logprobs_result(tokens, plan.top_logprobs)
    others = [_other_candidate(plan, choice) for choice in plan.more] if finish else []
    return {
        "candidates": [candidate, *others],
        "usageMetadata": usage,
        "modelVersion": plan.model,
        "responseId": plan.response_id,
    }


def _other_candidate(plan: Plan, choice: content.ChoicePlan) -> dict[str, Any]:
    """Another candidate (`candidateCount`), whole: sent with the first one's end."""
    call = choice.tool_call
    parts = (
        [{"functionCall": {"name": call.name, "args": json.loads(call.arguments)}}]
        if call
        else [{"text": "".join(choice.tokens)}]
    )
    candidate: dict[str, Any] = {
        "content": {"parts": parts, "role": "model"},
        "finishReason": choice.finish_reason,
        "index": choice.index,
    }
    if plan.top_logprobs is not None and call is None:
        candidate["logprobsResult"] = logprobs_result(choice.tokens, plan.top_logprobs)
    return candidate


def logprobs_result(tokens: list[str], top: int) -> dict[str, Any]:
    """Gemini's `logprobsResult` for `tokens`: the chosen tokens and the top candidates."""
    entries = content.token_logprobs(tokens, max(top, 1))
    return {
        "topCandidates": [
            {"candidates": [_gemini_logprob(t) for t in e["top_logprobs"][:top]]} for e in entries
        ],
        "chosenCandidates": [_gemini_logprob(e) for e in entries],
        "logProbabilitySum": round(sum(e["logprob"] for e in entries), 6),
    }


def _gemini_logprob(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"token": entry["token"], "logProbability": entry["logprob"]}


def answer_parts(plan: Plan) -> list[dict[str, Any]] | None:
    if plan.blocked:
        return None
    if plan.tool_call is not None:
        call = plan.tool_call
        return [{"functionCall": {"name": call.name, "args": json.loads(call.arguments)}}]
    return [{"text": "".join(plan.tokens)}]


async def stream_events(
    plan: Plan, ctx: SimContext, fault: Fault | None
) -> AsyncGenerator[dict[str, Any]]:
    """The `GenerateContentResponse` events of a streamed answer, paced.

    Text comes in the paced groups; a function call comes whole in one event, as Gemini
    sends it. The event completing the answer carries the finish reason and full usage.
    """
    if plan.blocked or plan.tool_call is not None:
        async with aclosing(ctx.pace([""], fault)) as groups:
            async for _ in groups:
                pass
        yield response_json(
            plan, answer_parts(plan), plan.finish_reason, usage_json(plan, plan.completion_tokens)
        )
        return
    sent = 0
    async with aclosing(ctx.pace(plan.tokens or [""], fault)) as groups:
        async for group in groups:
            sent += len(group)
            last = sent >= len(plan.tokens)
            yield response_json(
                plan,
                [{"text": "".join(group)}],
                plan.finish_reason if last else None,
                usage_json(plan, plan.completion_tokens if last else None),
                list(group),
            )


async def sse_body(events: AsyncGenerator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """Events as SSE, with the CRLF line ends Google uses."""
    async with aclosing(events) as items:
        async for event in items:
            yield b"data: " + json.dumps(event, separators=_COMPACT).encode() + b"\r\n\r\n"


async def json_array_body(events: AsyncGenerator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """Events as one JSON array sent element by element (the REST default without alt=sse)."""
    separator = b"["
    async with aclosing(events) as items:
        async for event in items:
            yield separator + json.dumps(event, indent=2).encode()
            separator = b"\n,\r\n"
    yield b"]" if separator != b"[" else b"[]"


async def _prepare(request: SimRequest, ctx: SimContext) -> tuple[Plan, Fault | None]:
    check_auth(request)
    model = check_model(request)
    body = parse_body(request)
    fault = ctx.fault(model, VENDOR)
    await apply_fault(fault, lambda f, _: fault_error(f, model))
    return plan_generate(body, model, ctx, fault), fault


async def generate_content(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1beta/models/{model}:generateContent`."""
    try:
        plan, fault = await _prepare(request, ctx)
    except GoogleError as error:
        return error.response()
    async with aclosing(ctx.pace(plan.tokens or [""], fault)) as groups:
        async for _ in groups:
            pass  # a whole answer takes as long as its stream would
    usage = usage_json(plan, plan.completion_tokens)
    answer = response_json(plan, answer_parts(plan), plan.finish_reason, usage, plan.tokens)
    return SimResponse.of_json(answer)


async def stream_generate_content(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`POST /v1beta/models/{model}:streamGenerateContent`, SSE with `alt=sse`."""
    try:
        plan, fault = await _prepare(request, ctx)
    except GoogleError as error:
        return error.response()
    events = stream_events(plan, ctx, fault)
    if request.query.get("alt") == "sse":
        return SimStream(sse_body(events))
    return SimStream(json_array_body(events), content_type="application/json; charset=UTF-8")


async def count_tokens(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`POST /v1beta/models/{model}:countTokens`."""
    try:
        check_auth(request)
        check_model(request)
        body = parse_body(request)
        request_body = body.get("generateContentRequest") or body
        texts = [turn_text(turn) for turn in _contents(request_body)]
    except GoogleError as error:
        return error.response()
    return SimResponse.of_json({"totalTokens": content.count_prompt_tokens(texts)})


# --- models ------------------------------------------------------------------------


def model_json(model: str) -> dict[str, Any]:
    embedding = model in EMBEDDING_MODELS
    methods = (
        ["embedContent", "batchEmbedContents"]
        if embedding
        else ["generateContent", "streamGenerateContent", "countTokens"]
    )
    return {
        "name": f"models/{model}",
        "version": "001",
        "displayName": model.replace("-", " ").title(),
        "description": f"Simulated {model}",
        "inputTokenLimit": 2048 if embedding else CONTEXT_LIMIT,
        "outputTokenLimit": 1 if embedding else MAX_OUTPUT_TOKENS,
        "supportedGenerationMethods": methods,
    }


async def list_models(request: SimRequest, ctx: SimContext) -> SimResponse:
    """`GET /v1beta/models`: every simulated model on one page; obeys the faults naming
    `MODEL_LIST` (the gateway's probes)."""
    try:
        check_auth(request)
        await apply_fault(ctx.fault(MODEL_LIST, VENDOR), lambda f, _: fault_error(f, MODEL_LIST))
    except GoogleError as error:
        return error.response()
    models = [model_json(model) for model in CHAT_MODELS + EMBEDDING_MODELS]
    return SimResponse.of_json({"models": models})


async def get_model(request: SimRequest, _: SimContext) -> SimResponse:
    try:
        check_auth(request)
        model = check_model(request)
    except GoogleError as error:
        return error.response()
    return SimResponse.of_json(model_json(model))


def _routes(version: str) -> list[Route]:
    model = f"/{version}/models/{{model}}"
    return [
        Route("POST", model + ":generateContent", generate_content),
        Route("POST", model + ":streamGenerateContent", stream_generate_content),
        Route("POST", model + ":countTokens", count_tokens),
        Route("GET", f"/{version}/models", list_models),
        Route("GET", model, get_model),
    ]


# v1 too: recent google-genai SDKs default to it, with the same wire format.
ROUTES: list[Route] = _routes("v1beta") + _routes("v1")
