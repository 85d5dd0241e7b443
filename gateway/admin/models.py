"""GET /v1/models and GET /v1/models/{model_id}: the catalog, filtered.

The filters are a declared query (`ModelsQuery`, read by `gateway.platform.shapes`) and
the answers the catalog's `ModelObject` (`providers.catalog.model_to_api`): the OpenAPI
document is written from the same declarations."""

from __future__ import annotations

from typing import Annotated

import attrs
from quart import Blueprint, Response, request

from gateway.admin.services import AdminServices
from gateway.platform.answers import ListOf, listing
from gateway.platform.apidoc import operation
from gateway.platform.errors import ApiError, not_found
from gateway.platform.shapes import Choices, Doc, parse_query
from gateway.platform.web import json_response
from providers.catalog import CAPABILITIES, MODEL_STATUSES, ModelInfo, ModelObject, model_to_api

TAG = "models"


@attrs.frozen
class ModelsQuery:
    """The list's filters; each left out lists every model."""

    provider: Annotated[
        str | None, Doc("A provider id, or its display name as `owned_by` shows it, any case")
    ] = None
    capability: Annotated[str, Choices(tuple(sorted(CAPABILITIES)))] | None = None
    status: Annotated[str, Choices(tuple(sorted(MODEL_STATUSES)))] | None = None


def models_blueprint(admin: AdminServices) -> Blueprint:
    bp = Blueprint("models", __name__)

    @bp.get("/v1/models")
    @operation(
        "Models of the catalog this key may use, optionally filtered",
        TAG,
        query=ModelsQuery,
        answer=ListOf[ModelObject],
        errors={400: "unknown_provider"},
    )
    async def list_models() -> Response:
        principal = await admin.auth.caller()
        principal.require("models")
        asked = parse_query(ModelsQuery, request.args)
        provider = None if asked.provider is None else _provider(admin, asked.provider)
        models = admin.catalog.models(
            provider=provider, capability=asked.capability, status=asked.status
        )
        # Like the vendors' lists, the models this key may use (its `allowed_models`).
        models = [m for m in models if principal.may_use(m.id)]
        return json_response(listing([model_to_api(m, detail=False) for m in models]))

    @bp.get("/v1/models/<path:model_id>")
    @operation(
        "One model, with its aliases and fallback chain",
        TAG,
        answer=ModelObject,
        errors={404: "model_not_found"},
    )
    async def get_model(model_id: str) -> Response:
        (await admin.auth.caller()).require("models")
        model = admin.catalog.model(model_id) or _passthrough(admin, model_id)
        if model is None:
            raise not_found(
                "model_not_found",
                _missing(admin, model_id),
                model=model_id,
                provider=None,
                available_models=[m.id for m in admin.catalog.models()],
            )
        return json_response(model_to_api(model, detail=True))

    return bp


def _missing(admin: AdminServices, model_id: str) -> str:
    """Why `model_id` is not found: its retirement (date and replacement) if its vendor
    shut it down, else that it does not exist."""
    retired = admin.catalog.retired(model_id)
    return retired.message() if retired is not None else f"The model '{model_id}' does not exist."


def _passthrough(admin: AdminServices, model_id: str) -> ModelInfo | None:
    """A pass-through model the operator allows, described for the first of its
    provider's families that has catalog models (its price is that family's ceiling)."""
    for capability in ("chat", "embeddings", "rerank"):
        found = admin.catalog.passthrough(model_id, capability)
        if found is not None:
            return found
    return None


def _provider(admin: AdminServices, value: str) -> str:
    """The `provider` filter's provider id: an id, or its display name ("OpenAI"), in any
    case; a name of no provider is `unknown_provider` (a refusal of what it names)."""
    names = {n.lower(): p.id for p in admin.catalog.providers() for n in (p.id, p.name)}
    found = names.get(value.lower())
    if found is None:
        ids = sorted({p.id for p in admin.catalog.providers()})
        raise ApiError(
            400,
            "unknown_provider",
            f"'provider' must be one of: {', '.join(ids)}.",
            param="provider",
            value=value,
        )
    return found
