"""What the adapters send for a translation (`TranscriptionRequest.translate`). Pure."""

from __future__ import annotations

from providers.audio_types import AudioClip, TranscriptionRequest
from providers.google_stt import TRANSLATE_INSTRUCTION, instruction, result_of
from providers.openai_audio import audio_path, transcription_fields

CLIP = AudioClip(b"RIFF", "wav", 3.0, "a.wav")


def test_openai_translation_asks_verbose_json_without_language_or_granularities() -> None:
    request = TranscriptionRequest(
        "whisper-1", CLIP, language="fr", prompt="A booking.", temperature=0.2, translate=True
    )
    assert audio_path(request) == "/audio/translations"
    assert transcription_fields(request, stream=False) == [
        ("model", "whisper-1"),
        ("response_format", "verbose_json"),
        ("prompt", "A booking."),
        ("temperature", "0.2"),
    ]
    transcription = TranscriptionRequest("whisper-1", CLIP, language="fr")
    assert audio_path(transcription) == "/audio/transcriptions"
    assert ("language", "fr") in transcription_fields(transcription, stream=False)


def test_gemini_translation_asks_for_english() -> None:
    request = TranscriptionRequest(
        "gemini-2.5-flash", CLIP, language="fr", prompt="Names: Dupont.", translate=True
    )
    text = instruction(request)
    assert text.startswith(TRANSLATE_INSTRUCTION) and "Names: Dupont." in text
    assert "'fr'" not in text
    assert result_of(" Good evening. ", request).language == "en"
    assert not instruction(TranscriptionRequest("gemini-2.5-flash", CLIP)).startswith("Translate")
