"""An agent's upload passes its agent's limits, like every other data-plane request
(through the admission policies the root plugs in: `Admission.admit_policies`).

The upload itself calls no provider; the processing it asks for does, later, in the
file-processing worker. So an agent's upload is admitted (suspension, requests per
minute, concurrent sessions, the cost budgets) with the estimated cost of that processing
reserved, and the reservation is held until the worker starts on the file: while a file
waits, its processing counts as committed spending, so a burst of uploads cannot queue
more processing than the budget leaves (beyond one upload's estimate). When the worker
starts, the hold is given back and each stage (OCR, transcription, embeddings) reserves
and settles its own share in the uploader's name and session, like a request of its own.
An upload that asks for no processing is settled at once (storing bytes is priced 0).

The estimate is an upper bound of the cost: every page at the OCR model's price, the
whole measured audio at the dearest transcription price when the model is `auto`, a
token for every 4 bytes of text at the embedding price. Only audio minutes, which are
measured exactly, are also checked as units here; the stages check pages and tokens.
"""

from __future__ import annotations

import io
from pathlib import Path

import attrs
import trio

from gateway.files.capabilities import Capabilities
from gateway.files.input import ServiceOptions
from gateway.files.services import FilesServices
from gateway.platform.auth import Principal
from gateway.upstream.admission import Ask
from gateway.upstream.limits import Hold
from providers.catalog import Catalog, ModelInfo
from providers.types import Usage
from store.keys import ApiKeyRecord

AUDIO_KINDS = ("mp3", "mp4", "m4a", "wav", "webm")
BYTES_PER_TOKEN = 4  # an upper bound of the tokens in a text: a token is >= 4 bytes on average
TOKENS_PER_AUDIO_SECOND = 5  # speech is ~2.5 words a second; a transcript's tokens, bounded
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"


def agent_of(principal: Principal) -> str | None:
    """The agent whose key calls (None for any other credential)."""
    credential = principal.credential
    return credential.agent_id if isinstance(credential, ApiKeyRecord) else None


@attrs.frozen
class Estimate:
    """What an upload's processing may cost at most, and the audio it holds."""

    cost: float = 0.0
    audio_minutes: float = 0.0


async def admit_upload(
    services: FilesServices,
    principal: Principal,
    path: Path,
    size: int,
    kind: str,
    filename: str,
    options: ServiceOptions,
) -> Hold | None:
    """Admit an upload under the policies that claim its key (an agent's limits), with
    its processing's estimate reserved (None when no policy claims it); raises their
    403/429. Cancellation: nothing is reserved."""
    if not services.admission.claims(principal):
        return None  # no policy limits this key: nothing to measure
    estimate = Estimate()
    if options.wants_processing:
        found = services.capabilities
        pages, seconds = await trio.to_thread.run_sync(
            _measure, found, path, kind, filename, options
        )
        estimate = processing_estimate(
            services.catalog,
            options,
            kind,
            size,
            pages,
            seconds,
            diarizing_model=found.diarizing_model,
        )
    usage = Usage(audio_seconds=estimate.audio_minutes * 60)
    return await services.admission.admit_policies(Ask(principal, usage, cost=estimate.cost))


def processing_estimate(
    catalog: Catalog,
    options: ServiceOptions,
    kind: str,
    size: int,
    pages: int,
    seconds: float,
    *,
    diarizing_model: str | None = None,
) -> Estimate:
    """What the processing `options` ask for may cost at most (pure)."""
    cost = 0.0
    if pages:
        cost += _price(catalog, options.ocr_model, "ocr", Usage(pages=pages))
    tokens = size // BYTES_PER_TOKEN
    if seconds:
        model = diarizing_model if options.speaker_diarization else None
        cost += _price(catalog, model, "transcription", Usage(audio_seconds=seconds))
        tokens = int(seconds * TOKENS_PER_AUDIO_SECOND)
    if options.vectorize:
        model = options.embedding_model or DEFAULT_EMBEDDING_MODEL
        cost += _price(catalog, model, "embeddings", Usage(prompt_tokens=tokens))
    return Estimate(cost=cost, audio_minutes=seconds / 60)


def _price(catalog: Catalog, model: str | None, capability: str, usage: Usage) -> float:
    """`usage` at `model`'s price, or at the dearest model of `capability` when the
    model is not one the catalog names (None: `auto`)."""
    info = None if model is None else catalog.model(model)
    candidates: list[ModelInfo] = (
        [info] if info is not None else catalog.models(capability=capability)
    )
    return max((float(m.metered_cost(usage).total) for m in candidates), default=0.0)


def _measure(
    found: Capabilities, path: Path, kind: str, filename: str, options: ServiceOptions
) -> tuple[int, float]:
    """Pages an upstream OCR model would read, seconds a transcription would hear
    (blocking). A file that cannot be measured is estimated at 0: its stage will fail
    on it and charge nothing."""
    pages, seconds = 0, 0.0
    try:
        if options.ocr_model not in (None, found.local_ocr_model) and kind in found.ocr_kinds:
            pages = _pages(path, kind)
        if options.auto_transcribe and kind in AUDIO_KINDS:
            seconds = found.measure_clip(path.read_bytes(), filename).duration_s
    except Exception:  # a parser's own failure on a damaged file (its stage reports it)
        return pages, seconds
    return pages, seconds


def _pages(path: Path, kind: str) -> int:
    if kind == "pdf":
        from pypdf import PdfReader

        return len(PdfReader(io.BytesIO(path.read_bytes())).pages)
    if kind == "tiff":
        from PIL import Image

        with Image.open(path) as image:
            return int(getattr(image, "n_frames", 1))
    return 1
