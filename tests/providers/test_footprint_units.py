"""Families metered in other units than tokens get an energy estimate from those units."""

from __future__ import annotations

import math

import pytest

from providers.catalog import load_catalog
from providers.footprint import estimate, estimate_usage, load_footprint_factors, metered_units
from providers.types import Usage

CATALOG = load_catalog()
F = load_footprint_factors()


def model(model_id: str):  # type: ignore[no-untyped-def]
    found = CATALOG.model(model_id)
    assert found is not None
    return found


def test_transcription_reads_audio_tokens_and_writes_the_spoken_text() -> None:
    # 10 s: 500 audio tokens in; 150 characters of speech / 4 = 38 tokens out
    assert metered_units(model("whisper-1"), Usage(audio_seconds=10.0), F) == (500, 38)
    # the vendor's own counts win
    assert metered_units(model("whisper-1"), Usage(7, 9, audio_seconds=10.0), F) == (7, 9)


def test_ocr_reads_page_images_and_writes_a_page_of_text() -> None:
    assert metered_units(model("mistral-ocr-latest"), Usage(pages=3), F) == (3 * 4096, 3 * 750)


def test_speech_reads_characters() -> None:
    assert metered_units(model("tts-1"), Usage(characters=120), F) == (120, 0)


@pytest.mark.parametrize(
    ("model_id", "units"),
    [
        ("whisper-1", Usage(audio_seconds=30.0)),
        ("mistral-ocr-latest", Usage(pages=1)),
        ("tts-1", Usage(characters=300)),
        ("rerank-v3.5", Usage(800, searches=1)),
        ("text-embedding-3-small", Usage(800)),
    ],
)
def test_non_chat_estimates_are_positive_and_never_high_confidence(
    model_id: str, units: Usage
) -> None:
    info = model(model_id)
    provider = CATALOG.provider(info.provider)
    assert provider is not None
    found = estimate_usage(info, provider, units)
    assert found.energy_kwh > 0 and found.carbon_gco2e > 0
    assert found.confidence_level in ("low", "medium")
    prompt, output = metered_units(info, units, F)
    assert found.energy_kwh == estimate(info, provider, output, prompt).energy_kwh
    assert math.isclose(found.carbon_gco2e, found.energy_kwh * found.grid_intensity_gco2_per_kwh)
