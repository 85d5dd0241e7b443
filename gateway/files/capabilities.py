"""What files' processing uses from other families, plugged in by the composition root:
transcription (audio), reading pages (OCR) and embeddings (retrieval), each in the
uploader's name through that family's own service, so the uploader's limits and usage
records apply exactly as if the uploader had called the endpoint."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

import attrs

from gateway.kernels.endpoints import Endpoint
from gateway.kernels.uploads.formats import Kind
from gateway.platform.auth import Principal
from providers.audio_types import AudioClip
from providers.ocr_types import OcrResult

# (uploader, clip, language, diarize) -> the transcript's text
Transcribe = Callable[[Principal, AudioClip, str | None, bool], Awaitable[str]]
# (uploader, document, its kind, model, pages or all) -> the pages read
ReadPages = Callable[[Principal, bytes, Kind, str, tuple[int, ...] | None], Awaitable[OcrResult]]


@attrs.frozen
class Capabilities:
    transcribe: Transcribe
    # An audio file's bytes measured (blocking: in a thread); 400 when it is not audio.
    measure_clip: Callable[[bytes, str], AudioClip]
    diarizing_model: str  # the model that tells speakers apart (estimates price it)
    read_pages: ReadPages
    ocr_kinds: Collection[str]  # the file kinds an upstream OCR model reads
    local_ocr_model: str  # the name of the local engine, which extraction runs itself
    embed: Endpoint  # POST /v1/embeddings
