"""What every OpenAI route of the simulator shares: constants, errors, authentication, bodies."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from providers.catalog import load_catalog
from providers.sim.catalog_models import merged
from providers.sim.core import Fault, SimRequest, SimResponse

VENDOR = "openai"
CONTEXT_LIMIT = 128_000
MAX_OUTPUT_TOKENS = 100_000
MAX_EMBEDDING_INPUTS = 2048
MAX_CHOICES = 128
MAX_TOP_LOGPROBS = 20
SYSTEM_FINGERPRINT = "fp_sim0000001"
EMBEDDING_SIZES = {"text-embedding-3-large": 3072}
DEFAULT_EMBEDDING_SIZE = 1536
MODELS = merged(
    (
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "o3-mini",
        "text-embedding-3-small",
        "text-embedding-3-large",
        "text-embedding-ada-002",
    ),
    "openai",
)
MODEL_CREATED = 1_715_367_049
_COMPACT = (",", ":")
_USAGE_DETAILS = {
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}
_USAGE = (
    '{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,'
    + json.dumps(_USAGE_DETAILS, separators=_COMPACT)[1:]
)
_TEXT_COMPLETION = (
    '{"id":"%s","object":"chat.completion","created":%d,"model":%s,"choices":[{"index":0,'
    '"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]},'
    '"logprobs":null,"finish_reason":"%s"}],"usage":%s,"service_tier":"default",'
    f'"system_fingerprint":"{SYSTEM_FINGERPRINT}"}}'
)
_FAULT_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found", "The model `{model}` does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for {model}."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", "overloaded", "The engine is currently overloaded."),
}


class OpenAIError(Exception):
    """An error answer in OpenAI's shape: `{"error": {message, type, param, code}}`."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        self.headers = dict(headers or {})

    def response(self) -> SimResponse:
        return SimResponse.of_json(self.body, status=self.status, headers=_headers(self.headers))


def _headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Headers every OpenAI answer carries (the client exposes `x-request-id`)."""
    headers = {"x-request-id": "req_" + os.urandom(12).hex(), "openai-version": "2020-10-01"}
    if extra:
        headers.update(extra)
    return headers


def fault_error(fault: Fault, model: str) -> OpenAIError:
    """The error a status fault produces, with OpenAI's type and code for that status."""
    status = fault.status or 500
    kind, code, message = _FAULT_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Error.")
    )
    headers = {"retry-after": "1"} if status == 429 else None
    return OpenAIError(
        status,
        fault.message or message.format(model=model),
        kind,
        code=fault.code or code,
        headers=headers,
    )


def check_auth(request: SimRequest) -> None:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise OpenAIError(
            401,
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            code="invalid_api_key",
        )


def parse_body(request: SimRequest) -> dict[str, Any]:
    try:
        body = request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise OpenAIError(400, "We could not parse the JSON body of your request.")
    return body


def check_model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIError(400, "you must provide a model parameter")
    if model.startswith("unknown"):
        raise model_not_found(model)
    return model


RESPONSES_ONLY = "This model is only supported in v1/responses and not in v1/chat/completions."


def refuse_responses_only(model: str) -> None:
    """OpenAI's 404 for a model it serves only through `/v1/responses` (the catalog's
    `endpoints`), asked on chat completions: `invalid_request_error`, `param: model`,
    no code (as OpenAI answers it)."""
    info = load_catalog().model(model)
    if info is not None and not info.served_on("chat_completions"):
        raise OpenAIError(404, RESPONSES_ONLY, param="model")


def model_not_found(model: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        code="model_not_found",
    )


def usage_json(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        **_USAGE_DETAILS,
    }
