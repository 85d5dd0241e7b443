"""The checks the schemathesis run adds to schemathesis's own (loaded as its hooks module
by tests/operator/test_fuzz.py).

- A request the document calls valid is served, or refused for what it means, never for
  its shape: a 4xx answer to it must carry an error code the operation declares, and not
  one of the shape codes (`invalid_request`, `invalid_json`), which say the document is
  looser than the server. (Schemathesis's own `positive_data_acceptance` treats every 400
  as a shape refusal, and a gateway has refusals of meaning: an unknown model, a
  webhook host that resolves to a private address.)
- A provider's own refusal (the spec's `invalid_request` with `provider`) is one of
  meaning: the vendor judged what the gateway sent. So is a refusal of the `model` a
  request names for what the catalog says of it (a known model without the route's
  capability, or one the forced provider does not serve: `param` is `model` or
  `provider`): the document takes any model id, since the catalog,
  not the route, decides which models serve it (`GET /v1/models?capability=...`).
- Every error answer's code is one the document declares for its status
  (`x-error-codes`): the document lists what each route can answer.

An operation that lists no codes (none is left: every route declares its types) may
refuse a valid request with any code but a shape code. Where the server refuses what
fields mean together (an end date before the start, a `tool_choice` naming no tool), it
answers with a code of its own
(`invalid_period`, `invalid_tool_choice`, ...; docs/errors.md), so that a shape refusal
always says the document and the server disagree.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

SHAPE_CODES = frozenset({"invalid_request", "invalid_json"})
# Answers schemathesis's own checks judge (auth, a missing id, a conflict, a limit, 5xx).
NOT_A_REFUSAL_OF_MEANING = frozenset({401, 403, 404, 405, 409, 429})


def _error(response: Any) -> dict[str, Any]:
    try:
        body = json.loads(response.content or b"null")
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _error_code(response: Any) -> str | None:
    code = _error(response).get("code")
    return code if isinstance(code, str) else None


def _refused_by_a_provider(response: Any) -> bool:
    """The spec's provider error `invalid_request` (400, with `provider`): the vendor
    refused what the gateway sent, which no document of the gateway's can foresee (a
    vendor without `top_k`, one that wants a non-empty message)."""
    return bool(_error(response).get("provider"))


def _refused_for_its_model(response: Any) -> bool:
    """A known model without the route's capability (`param` is `model`), or one that the
    forced `provider` does not serve: the catalog's verdict on the ids, which the document
    cannot enumerate per route."""
    return _error(response).get("param") in ("model", "provider")


def _declared(case: Any, status: int) -> list[str] | None:
    responses = case.operation.definition.raw.get("responses", {})
    entry = responses.get(str(status))
    return None if entry is None else entry.get("x-error-codes")


def _lists_codes(case: Any) -> bool:
    """Whether the operation's entry lists its error codes (written from declarations);
    the hand-written entries of families not yet moved do not."""
    responses = case.operation.definition.raw.get("responses", {})
    return any("x-error-codes" in entry for entry in responses.values())


@schemathesis.check
def valid_requests_are_refused_only_for_their_meaning(
    ctx: Any, response: Any, case: Any
) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if is_unexpected_http_status_case(case):
        return None
    status = response.status_code
    if status < 400 or status >= 500 or status in NOT_A_REFUSAL_OF_MEANING:
        return None
    code = _error_code(response)
    declared = _declared(case, status) or []
    shape = (
        code in SHAPE_CODES
        and not _refused_by_a_provider(response)
        and not _refused_for_its_model(response)
    )
    if shape or (_lists_codes(case) and code not in declared):
        raise AssertionError(
            f"A request valid by the document was refused: {status} {code} "
            f"(declared: {declared}): {response.content[:300]!r}"
        )
    return None


@schemathesis.check
def error_codes_are_declared(ctx: Any, response: Any, case: Any) -> bool | None:
    status = response.status_code
    if status < 400:
        return None
    declared = _declared(case, status)
    if declared is None:
        return None  # an undocumented status: status_code_conformance says so
    code = _error_code(response)
    if code not in declared:
        raise AssertionError(
            f"{case.operation.label} answered {status} `{code}`, which its document entry "
            f"does not list (it lists {declared})"
        )
    return None
