"""Schemathesis against the live gateway, driven by our own OpenAPI document.

Every operation gets a fixed number of generated requests (valid by the document, with an
admin key; a deterministic seed), and every answer must be no 5xx, a documented status
and content type, and a body that matches its documented schema. The operations are dealt
into `SHARDS` tests (operation i goes to shard i % SHARDS), each against its own gateway,
so that parallel test processes share the work; together they fuzz every operation with
the same examples as one test did.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import hypothesis
import pytest
import schemathesis
import trio
from hypothesis import HealthCheck, Phase
from schemathesis import checks

from gateway.app.server import RunningGateway
from tests.operator.conftest import ADMIN_KEY

EXAMPLES_PER_OPERATION = 12
SHARDS = 8
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


def fuzz(document: dict[str, Any], base_url: str, shard: int) -> list[str]:
    """Run the shard's operations; the failures, one line each (empty when all passed)."""
    schema = schemathesis.openapi.from_dict(document)
    failures: list[str] = []
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    for index, result in enumerate(schema.get_all_operations()):
        if index % SHARDS != shard:
            continue
        operation = result.ok()

        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: schemathesis.Case) -> None:
            response = case.call(base_url=base_url, headers=headers, timeout=30)
            case.validate_response(response, checks=CHECKS)

        try:
            run()
        except (Exception, BaseExceptionGroup) as failure:  # schemathesis groups its findings
            failures.append(f"{operation.label}: {str(failure)[:1500]}")
    return failures


@pytest.mark.parametrize("shard", range(SHARDS))
async def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    gateway: RunningGateway, shard: int
) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
    failures = await trio.to_thread.run_sync(partial(fuzz, document, gateway.url, shard))
    assert failures == [], "\n\n".join(failures)
