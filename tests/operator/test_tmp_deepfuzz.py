from functools import partial

import httpx
import hypothesis
import schemathesis
import trio
from hypothesis import HealthCheck, Phase

from tests.operator.conftest import ADMIN_KEY
from tests.operator.test_fuzz import CHECKS

MINE = ("/v1/audio", "/v1/files", "/v1/ocr", "/v1/management/voice-mappings")


def fuzz(document, base_url):
    document["paths"] = {p: o for p, o in document["paths"].items() if p.startswith(MINE)}
    schema = schemathesis.openapi.from_dict(document)
    failures = []
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=80,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case):
            response = case.call(base_url=base_url, headers=headers, timeout=60)
            case.validate_response(response, checks=CHECKS)

        try:
            run()
        except (Exception, BaseExceptionGroup) as failure:
            failures.append(f"{operation.label}: {str(failure)[:2500]}")
    return failures


async def test_deep(gateway):
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
    failures = await trio.to_thread.run_sync(partial(fuzz, document, gateway.url))
    print("\nFAILURES\n" + "\n\n".join(failures))
