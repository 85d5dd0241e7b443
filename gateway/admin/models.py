"""GET /v1/models and GET /v1/models/{model_id}: the catalog, filtered."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.admin.services import AdminServices
from gateway.platform.errors import invalid_request, not_found
from gateway.platform.web import json_response
from providers.catalog import CAPABILITIES, MODEL_STATUSES, ModelInfo, model_to_api


def models_blueprint(admin: AdminServices) -> Blueprint:
    bp = Blueprint("models", __name__)

    @bp.get("/v1/models")
    async def list_models() -> Response:
        principal = await admin.auth.caller()
        principal.require("models")
        provider = _provider(admin)
        capability = _filter("capability", CAPABILITIES)
        status = _filter("status", MODEL_STATUSES)
        models = admin.catalog.models(provider=provider, capability=capability, status=status)
        # Like the vendors' lists, the models this key may use (its `allowed_models`).
        models = [m for m in models if principal.may_use(m.id)]
        return json_response(
            {"object": "list", "data": [model_to_api(m, detail=False) for m in models]}
        )

    @bp.get("/v1/models/<path:model_id>")
    async def get_model(model_id: str) -> Response:
        (await admin.auth.caller()).require("models")
        model = admin.catalog.model(model_id) or _passthrough(admin, model_id)
        if model is None:
            raise not_found(
                "model_not_found",
                f"The model '{model_id}' does not exist.",
                model=model_id,
                provider=None,
                available_models=[m.id for m in admin.catalog.models()],
            )
        return json_response(model_to_api(model, detail=True))

    return bp


def _passthrough(admin: AdminServices, model_id: str) -> ModelInfo | None:
    """A pass-through model the operator allows, described for the first of its
    provider's families that has catalog models (its price is that family's ceiling)."""
    for capability in ("chat", "embeddings", "rerank"):
        found = admin.catalog.passthrough(model_id, capability)
        if found is not None:
            return found
    return None


def _provider(admin: AdminServices) -> str | None:
    """The `provider` filter: a provider id, or its display name as `owned_by` shows it
    ("OpenAI"), in any case."""
    value = request.args.get("provider")
    if value is None or value == "":
        return None
    names = {n.lower(): p.id for p in admin.catalog.providers() for n in (p.id, p.name)}
    found = names.get(value.lower())
    if found is None:
        ids = sorted({p.id for p in admin.catalog.providers()})
        raise invalid_request(
            f"'provider' must be one of: {', '.join(ids)}.", param="provider", value=value
        )
    return found


def _filter(name: str, allowed: set[str] | frozenset[str]) -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        return None
    if value not in allowed:
        raise invalid_request(
            f"'{name}' must be one of: {', '.join(sorted(allowed))}.", param=name, value=value
        )
    return value
