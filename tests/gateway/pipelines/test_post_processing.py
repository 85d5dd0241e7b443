"""Pure post-processing: spoken dictation commands, legal layout, the scribe's note check,
and the HIPAA flag's rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.pipelines.legal import apply_commands, format_legal
from gateway.pipelines.scribe import hipaa_covered, structured_note
from gateway.platform.errors import ApiError


@pytest.mark.parametrize(
    ("spoken", "written"),
    [
        ("dear sir comma new paragraph thank you period", "Dear sir,\n\nThank you."),
        (
            "the client said quote we agree end quote period",
            "The client said \u201cwe agree\u201d.",
        ),
        ("Is it signed? question mark. new line yes", "Is it signed?\nYes"),
        ("see open paren exhibit a close paren semicolon done", "See (exhibit a); done"),
        ("no commands here", "No commands here"),
    ],
)
def test_spoken_commands(spoken: str, written: str) -> None:
    assert apply_commands(spoken) == written


def test_legal_layout_numbers_paragraphs_and_writes_sections() -> None:
    text = "1. the buyer pays under section 2\n\n  Delivery is due in May  \n\n"
    assert format_legal(text) == "1. The buyer pays under \u00a7 2.\n\n2. Delivery is due in May."


NOTE: dict[str, Any] = {
    "chief_complaint": None,
    "duration": None,
    "symptoms": [],
    "medications_mentioned": [],
    "allergies_mentioned": [],
    "vital_signs": None,
}


def test_a_note_in_its_schema_passes_even_fenced() -> None:
    assert structured_note(json.dumps(NOTE)) == NOTE
    assert structured_note("```json\n" + json.dumps(NOTE) + "\n```") == NOTE


@pytest.mark.parametrize(
    "bad",
    [
        "no json",
        "[]",
        json.dumps({k: v for k, v in NOTE.items() if k != "duration"}),
        json.dumps(NOTE | {"symptoms": [1]}),
        json.dumps(NOTE | {"chief_complaint": 3}),
        json.dumps(NOTE | {"vital_signs": {"bp": [1]}}),
        json.dumps(NOTE | {"vital_signs": {"bp": True}}),
    ],
)
def test_a_note_off_its_schema_is_refused(bad: str) -> None:
    with pytest.raises(ApiError) as refused:
        structured_note(bad)
    assert (refused.value.status, refused.value.code) == (502, "invalid_model_output")


def test_hipaa_needs_every_stage_local_or_covered() -> None:
    covered = {"openai"}.__contains__
    assert hipaa_covered({"stt": "local", "llm": "openai", "tts": None}, covered)
    assert not hipaa_covered({"stt": "local", "llm": "anthropic"}, covered)
    assert not hipaa_covered({}, covered)
