"""The document and the server agree: schemathesis over `GET /openapi.json`, against a
live gateway (issue 31 point 13, issue 32 point 5).

Every operation of the document (the WebSocket routes aside: schemathesis speaks plain
HTTP) is driven through schemathesis's coverage phase (boundary values of every declared
field, missing and wrong fields, unexpected methods) and its fuzzing phase (generated
requests, valid and invalid by the document), with an admin key and a fixed seed. Each
answer must be no 5xx, a documented status, content type and body; a request the
document calls invalid must be refused (the document is not looser than the server),
and one it calls valid must be served or refused for its meaning, never with a shape
code (not stricter), and its error codes must be the ones the document lists
(`tests/operator/schemathesis_checks.py`); `OPTIONS` and 405s must name exactly the
documented methods. Stateful and authorization checks are left to the tests that
create real objects.

The run is bounded: a few examples per operation (`EXAMPLES`) and a time limit, on
two workers; schemathesis runs in its own process, beside the in-process gateway. It
takes about two minutes on two shared cores.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from gateway.app.server import RunningGateway
from tests.operator.conftest import ADMIN_KEY
from tests.operator.test_openapi import fetch_document

EXAMPLES = 10
SEED = int(os.environ.get("OPENAPI_FUZZ_SEED", "20261127"))
TIME_LIMIT_S = 480  # the whole run; it takes about 2-3 minutes on two shared cores
ROOT = Path(__file__).resolve().parents[2]
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "valid_requests_are_refused_only_for_their_meaning",
    "error_codes_are_declared",
)


def config(base_url: str, reports: Path) -> str:
    """schemathesis.toml for the run."""
    return f"""
hooks = "tests.operator.schemathesis_checks"
base-url = "{base_url}"
seed = {SEED}
workers = 2
request-timeout = 60
headers = {{ Authorization = "Bearer {ADMIN_KEY}" }}
suppress-health-check = ["all"]

[generation]
max-examples = {EXAMPLES}
no-shrink = true
database = "none"

[checks]
positive_data_acceptance = {{ enabled = false }}
use_after_free = {{ enabled = false }}
ensure_resource_availability = {{ enabled = false }}
ignored_auth = {{ enabled = false }}
object_level_authorization = {{ enabled = false }}

[phases.stateful]
enabled = false

# No values taken from earlier answers: reused ids let the run rotate and revoke its own
# admin key (every later case a 401 that tests nothing), and make the cases depend on
# the order the two workers meet the operations in (a run that is not repeatable).
[phases.examples.extra-data-sources]
responses = false

[phases.fuzzing.extra-data-sources]
responses = false

[reports.ndjson]
path = "{reports / "run.ndjson"}"
"""


async def run_schemathesis(base_url: str, workdir: Path, *select: str) -> tuple[list[str], str]:
    """Run schemathesis over the gateway at `base_url` (`select`: more CLI options, such
    as `--include-tag`); the failures, one line each, and its output."""
    settings = workdir / "schemathesis.toml"
    settings.write_text(config(base_url, workdir))
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(settings),
        "run",
        f"{base_url}/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--phases",
        "examples,coverage,fuzzing",
        "--no-color",
        "--continue-on-failure",
        *select,
    ]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    with trio.fail_after(TIME_LIMIT_S):
        done = await trio.run_process(
            command, cwd=ROOT, env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    output = (done.stdout + done.stderr).decode(errors="replace")
    return failures(workdir / "run.ndjson"), output


def failures(report: Path) -> list[str]:
    """Each failed check of the run: operation, check, answer, and the request's case."""
    found: dict[tuple[str, str], str] = {}
    for line in report.read_text().splitlines():
        event = json.loads(line).get("ScenarioFinished")
        if not event or event["status"] not in ("failure", "error"):
            continue
        recorder = event["recorder"]
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                if check.get("status") == "failure":
                    found.setdefault(
                        (recorder["label"], check["name"]),
                        _described(recorder, case_id, check),
                    )
    return [f"{label}: {check}: {text}" for (label, check), text in sorted(found.items())]


def _described(recorder: dict[str, Any], case_id: str, check: dict[str, Any]) -> str:
    info = (check.get("failure_info") or {}).get("failure", {})
    case = recorder["cases"].get(case_id, {}).get("value", {})
    phase = case.get("meta", {}).get("phase", {}).get("data", {}).get("description", "")
    asked = {k: case.get(k) for k in ("method", "path", "query", "body") if case.get(k)}
    return f"{info.get('title', '')}: {info.get('message', '')[:700]} [{phase}] {asked}"[:1400]


def websocket_operations(document: dict[str, Any]) -> list[str]:
    """The operation ids of WebSocket routes (their success is 101 Switching Protocols):
    schemathesis speaks plain HTTP, so it could only see their 426; the WebSocket tests
    (tests/realtime, tests/fronts) drive them, tests/gateway/platform/test_routing.py
    their 426."""
    return sorted(
        op["operationId"]
        for operations in document["paths"].values()
        for op in operations.values()
        if "101" in op["responses"]
    )


async def test_the_document_and_the_server_agree(gateway: RunningGateway, tmp_path: Path) -> None:
    document = await fetch_document(gateway)
    sockets = websocket_operations(document)
    assert sockets, "the WebSocket routes are in the document"
    select = [option for op in sockets for option in ("--exclude-operation-id", op)]
    found, output = await run_schemathesis(gateway.url, tmp_path, *select)
    assert "Tested:" in output or "SUMMARY" in output, output[-3000:]
    assert found == [], "\n".join(found)
