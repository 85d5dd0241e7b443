"""Person names in a file's PII report, through the HTTP interface: the named-entity model
finds names with no title or label, and the report's offsets point at them in `/text`."""

from __future__ import annotations

import json

import httpx
import pytest

from .test_files_api import processed, upload

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LETTER = (
    "Minutes of the steering meeting\n\n"
    "The meeting was opened by Priya Raghunathan, who thanked Robert Chen for the draft.\n"
    "The Quarterly Report is attached; questions to jane.doe@example.com.\n"
    "Patient: Maria Lopez was moved to ward B.\n"
)


async def test_the_report_finds_unlabelled_names_at_their_offsets(
    http: httpx.AsyncClient,
) -> None:
    answer = await upload(
        http,
        "minutes.txt",
        LETTER.encode(),
        service=json.dumps({"process": True, "detect_pii": True}),
    )
    assert answer.status_code == 200, answer.text
    file_id = answer.json()["id"]
    status = await processed(http, file_id)
    assert status["status"] == "processed", status

    full = (await http.get(f"/v1/files/{file_id}/text")).json()["text"]
    report = (await http.get(f"/v1/files/{file_id}/pii")).json()
    found = {
        (f["type"], full[f["location"]["start"] : f["location"]["end"]]): f
        for f in report["findings"]
    }
    assert set(found) == {
        ("person_name", "Priya Raghunathan"),
        ("person_name", "Robert Chen"),
        ("person_name", "Maria Lopez"),
        ("email", "jane.doe@example.com"),
    }
    assert report["summary"] == {"person_name": 3, "email": 1}
    name = found[("person_name", "Priya Raghunathan")]
    assert name["text"] == "P**** **********n"
    assert name["redacted"] is True
    assert 0 < name["confidence"] <= 1
    assert name["location"]["page"] == 1
