"""GET /v1/models and GET /v1/models/{model_id}: the catalog."""

from __future__ import annotations

from gateway.operator.apidoc import STR, Operation, listing, query, ref

OPERATIONS = {
    "models.list_models": Operation(
        "Models of the catalog, optionally filtered",
        "models",
        listing(ref("Model")),
        query=(
            query("provider", STR, "a provider id"),
            query("capability", STR, "e.g. chat, embeddings, speech"),
            query("status", STR, "available, deprecated or beta"),
        ),
        errors=(400, 401, 403),
    ),
    "models.get_model": Operation(
        "One model, with its aliases and fallback chain",
        "models",
        ref("Model"),
        errors=(401, 403, 404),
    ),
}
