"""`GET /v1/models` and `GET /v1/models/{model}` of the simulated OpenAI API."""

from __future__ import annotations

from typing import Any

from providers.sim.core import SimContext, SimRequest, SimResponse
from providers.sim.faults import MODEL_LIST, apply_fault
from providers.sim.openai.common import (
    MODEL_CREATED,
    MODELS,
    VENDOR,
    OpenAIError,
    _headers,
    check_auth,
    fault_error,
    model_not_found,
)


def model_json(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": "system"}


__all__ = ["MODEL_LIST", "get_model", "list_models", "model_json"]


async def list_models(request: SimRequest, ctx: SimContext) -> SimResponse:
    try:
        check_auth(request)
        await apply_fault(ctx.fault(MODEL_LIST, VENDOR), lambda f, _: fault_error(f, MODEL_LIST))
    except OpenAIError as error:
        return error.response()
    payload = {"object": "list", "data": [model_json(model) for model in MODELS]}
    return SimResponse.of_json(payload, headers=_headers())


async def get_model(request: SimRequest, _: SimContext) -> SimResponse:
    model = request.path_params["model"]
    try:
        check_auth(request)
        if model.startswith("unknown"):
            raise model_not_found(model)
    except OpenAIError as error:
        return error.response()
    return SimResponse.of_json(model_json(model), headers=_headers())
