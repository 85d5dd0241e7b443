"""POST /v1/embeddings and POST /v1/rerank."""

from __future__ import annotations

from gateway.operator.apidoc import (
    BOOL,
    FILLED,
    INT,
    NUM,
    RETRIEVAL_MODEL,
    STR,
    STRS,
    Operation,
    all_required,
    arr,
    forced_provider,
    nullable,
    obj,
    ref,
)

RETRIEVAL_ERRORS = (400, 401, 403, 404, 408, 413, 429, 502, 503, 504)

EMBEDDINGS = Operation(
    "Embeddings for one text or many",
    "retrieval",
    obj(
        ("object", "data", "model", "usage"),
        object={"const": "list"},
        data=arr(
            all_required(
                object={"const": "embedding"},
                index=INT,
                embedding={"anyOf": [arr(NUM), STR]},
            )
        ),
        model=STR,
        usage=all_required(prompt_tokens=INT, total_tokens=INT),
        service=ref("ServiceMetadata"),
    ),
    request=obj(
        ("model", "input"),
        model=RETRIEVAL_MODEL,
        input={"anyOf": [STR, arr(STR, minItems=1, maxItems=2048)]},
        encoding_format={"enum": ["float", "base64"]},
        dimensions={"type": "integer", "minimum": 1},
        user=STR,
        provider=forced_provider("embeddings"),
        service=obj(cache={"enum": ["skip"]}, fallbacks=STRS),
    ),
    errors=RETRIEVAL_ERRORS,
)

RERANK = Operation(
    "Documents ordered by relevance to a query",
    "retrieval",
    obj(
        ("id", "results"),
        id=STR,
        results=arr(
            obj(
                ("index", "relevance_score"),
                index=INT,
                relevance_score={"type": "number", "minimum": 0, "maximum": 1},
                document=obj(text=STR),
            )
        ),
        meta=obj(billed_units=obj(search_units=INT)),
        service=ref("ServiceMetadata"),
    ),
    request=obj(
        ("model", "query", "documents"),
        model=RETRIEVAL_MODEL,
        query=FILLED,
        documents=arr(
            {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    obj(
                        ("text",),
                        text={"type": "string", "minLength": 1},
                        id={"type": ["string", "integer", "null"]},
                    ),
                ]
            },
            minItems=1,
            maxItems=1000,
        ),
        top_n=nullable({"type": "integer", "minimum": 1})
        | {"description": "at most the number of documents (`invalid_top_n`)"},
        return_documents=nullable(BOOL),
        provider=forced_provider("rerank"),
    ),
    errors=RETRIEVAL_ERRORS,
)

OPERATIONS = {"embeddings.embeddings": EMBEDDINGS, "rerank.rerank": RERANK}
