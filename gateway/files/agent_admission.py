"""An agent's upload passes its agent's limits, like every other data-plane request.

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

import trio

from gateway.agents.counters import Amounts
from gateway.agents.gate import admit_agent, suspended_error
from gateway.agents.hold import AgentShare
from gateway.audio.transcription import DIARIZING_MODEL, measured_clip
from gateway.files.input import ServiceOptions
from gateway.ocr.input import LOCAL_MODEL, OCR_KINDS
from gateway.platform.auth import Principal
from gateway.platform.state import AppState
from gateway.upstream.admission import PolicyBound
from gateway.upstream.limits import Unlimited
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


async def precheck(state: AppState, principal: Principal) -> None:
    """Refuse a suspended (or deleted) agent before its upload's bytes are read."""
    agent_id = agent_of(principal)
    if agent_id is None:
        return
    loaded = await state.agents.get(agent_id)
    if loaded is not None and loaded.record.status == "suspended":
        raise suspended_error(loaded)


async def admit_upload(
    state: AppState,
    principal: Principal,
    path: Path,
    size: int,
    kind: str,
    filename: str,
    options: ServiceOptions,
) -> PolicyBound | None:
    """Admit an agent's upload with its processing's estimate reserved (None for any
    other key); raises the agent's 403/429. Cancellation: nothing is reserved."""
    agent_id = agent_of(principal)
    if agent_id is None:
        return None
    amounts = Amounts()
    if options.wants_processing:
        pages, seconds = await trio.to_thread.run_sync(_measure, path, kind, filename, options)
        amounts = processing_estimate(state.catalog, options, kind, size, pages, seconds)
    reservation = await admit_agent(state.agents, agent_id, principal.agent_session, amounts)
    return PolicyBound(Unlimited(), [AgentShare(state.agents, reservation, "files")])


def processing_estimate(
    catalog: Catalog,
    options: ServiceOptions,
    kind: str,
    size: int,
    pages: int,
    seconds: float,
) -> Amounts:
    """What the processing `options` ask for may cost at most (pure)."""
    cost = 0.0
    if pages:
        cost += _price(catalog, options.ocr_model, "ocr", Usage(pages=pages))
    tokens = size // BYTES_PER_TOKEN
    if seconds:
        model = DIARIZING_MODEL if options.speaker_diarization else None
        cost += _price(catalog, model, "transcription", Usage(audio_seconds=seconds))
        tokens = int(seconds * TOKENS_PER_AUDIO_SECOND)
    if options.vectorize:
        model = options.embedding_model or DEFAULT_EMBEDDING_MODEL
        cost += _price(catalog, model, "embeddings", Usage(prompt_tokens=tokens))
    return Amounts(cost=cost, audio_minutes=seconds / 60)


def _price(catalog: Catalog, model: str | None, capability: str, usage: Usage) -> float:
    """`usage` at `model`'s price, or at the dearest model of `capability` when the
    model is not one the catalog names (None: `auto`)."""
    info = None if model is None else catalog.model(model)
    candidates: list[ModelInfo] = (
        [info] if info is not None else catalog.models(capability=capability)
    )
    return max((float(m.metered_cost(usage).total) for m in candidates), default=0.0)


def _measure(path: Path, kind: str, filename: str, options: ServiceOptions) -> tuple[int, float]:
    """Pages an upstream OCR model would read, seconds a transcription would hear
    (blocking). A file that cannot be measured is estimated at 0: its stage will fail
    on it and charge nothing."""
    pages, seconds = 0, 0.0
    try:
        if options.ocr_model not in (None, LOCAL_MODEL) and kind in OCR_KINDS:
            pages = _pages(path, kind)
        if options.auto_transcribe and kind in AUDIO_KINDS:
            seconds = measured_clip(path.read_bytes(), filename).duration_s
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
