"""The families an extra gates (audio, pipelines, realtime; files, documents, OCR): their
services and their mounts, imported only when one of them is mounted.

A core install mounts none of them (`gateway.app.extras`), so their ~150 modules (routes,
services, parsers, the voice stages) never load into its gateway: ~5 MiB of resident
memory (bench/README.md, "Memory of the core"). The registry (`gateway.app.families`)
declares them with a mount that imports this module on its first call, and the
composition root (`gateway.app.assembly`) builds their services here only when one is
mounted. Nothing on the request's path looks anything up: the import is done once, at
start.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import partial

import trio

from gateway.app.assembly import endpoint
from gateway.app.families import Mounted
from gateway.app.state import AppState
from gateway.app.voice_stages import stages_of
from gateway.audio.input import TranscriptionParams
from gateway.audio.mapping_book import VoiceMappingBook
from gateway.audio.render import transcript_text
from gateway.audio.routes import TRANSCRIPTIONS_PATH, audio_blueprint, audio_routes
from gateway.audio.services import AudioServices
from gateway.audio.transcription import DIARIZING_MODEL, measured_clip, transcribe_clip
from gateway.audio.voices import mapping_named
from gateway.documents import retention
from gateway.documents import worker as document_worker
from gateway.documents.routes import documents_blueprint
from gateway.documents.services import DocumentsServices
from gateway.files import worker as file_worker
from gateway.files.capabilities import Capabilities
from gateway.files.routes import files_blueprint
from gateway.files.service import attached
from gateway.files.services import FilesServices
from gateway.kernels.uploads.formats import LARGEST_UPLOAD, Kind
from gateway.ocr.input import LOCAL_MODEL as LOCAL_OCR_MODEL
from gateway.ocr.input import OCR_KINDS
from gateway.ocr.routes import ocr_blueprint
from gateway.ocr.service import read_pages
from gateway.ocr.services import OcrServices
from gateway.pipelines.capabilities import VoiceParts
from gateway.pipelines.routes import PIPELINE_BODY_LIMIT, PIPELINES_PATH, pipelines_blueprint
from gateway.pipelines.services import PipelinesServices
from gateway.pipelines.sessions import PipelineSessions
from gateway.platform.auth import Principal
from gateway.platform.uploads import file_upload_limits
from gateway.realtime.native import NativeRelays
from gateway.realtime.routes import realtime_blueprint
from gateway.realtime.services import RealtimeServices
from gateway.retrieval.embeddings import serve_embeddings
from gateway.retrieval.rerank import serve_rerank
from providers.audio_types import AudioClip
from providers.ocr_types import OcrResult

# The transcription upload: 25 MB of audio plus the form's other fields. Its body is read
# as a stream with its own limit; Quart's MAX_CONTENT_LENGTH would refuse it at once.
TRANSCRIPTION_UPLOAD_LIMIT = 26 * 1024 * 1024


def assemble(state: AppState, mounted: Collection[str]) -> None:
    """The services of the gated families (`gateway.app.assembly.GATED`) in `mounted`,
    and of those they call (files transcribe through audio and read pages through OCR;
    pipelines speak through audio; realtime runs on pipelines), into `state`."""
    if {"audio", "pipelines", "realtime", "files"} & set(mounted):
        state.voice_mappings = VoiceMappingBook()
        state.audio = _audio_services(state)
    if {"ocr", "files"} & set(mounted):
        state.ocr = _ocr_services(state)
    if "files" in mounted:
        state.files_services = _files_services(state)
        state.chat.attachments.reader = partial(attached, state.files_services)
    if "documents" in mounted:
        state.documents_services = _documents_services(state)
    if {"pipelines", "realtime"} & set(mounted):
        state.pipelines = _pipelines_services(state)


def _audio_services(state: AppState) -> AudioServices:
    return AudioServices(
        state.engine,
        state.admission,
        state.auth,
        state.settings,
        state.db,
        state.voice_mappings,
    )


def _ocr_services(state: AppState) -> OcrServices:
    return OcrServices(
        state.engine,
        state.admission,
        state.auth,
        state.settings,
        state.files.blobs,
        trio.CapacityLimiter(state.settings.ocr_page_concurrency),
    )


def _files_services(state: AppState) -> FilesServices:
    """Files, with what their processing uses from audio, OCR and retrieval."""
    return FilesServices(
        state.db,
        state.settings,
        state.auth,
        state.engine,
        state.admission,
        state.files,
        file_capabilities(state),
    )


def _documents_services(state: AppState) -> DocumentsServices:
    """Data documents, embedded and reranked through retrieval's endpoints in process."""
    return DocumentsServices(
        state.db,
        state.settings,
        state.auth,
        state.catalog,
        state.registry,
        state.documents,
        endpoint(serve_embeddings, state.retrieval),
        endpoint(serve_rerank, state.retrieval),
    )


def _pipelines_services(state: AppState) -> PipelinesServices:
    """Pipelines, speaking through the audio family's stages and voice mappings."""
    return PipelinesServices(
        state.db,
        state.settings,
        state.auth,
        state.engine,
        state.admission,
        state.files.pii_scans,
        VoiceParts(
            stages_of(state),
            measured_clip,
            lambda workspace, name: mapping_named(state.audio, workspace, name),
        ),
    )


def file_capabilities(state: AppState) -> Capabilities:
    """What files' processing uses from the audio, OCR and retrieval families."""
    audio, ocr, retrieval = state.audio, state.ocr, state.retrieval

    async def transcribe(
        principal: Principal, clip: AudioClip, language: str | None, diarize: bool
    ) -> str:
        params = TranscriptionParams(
            model=DIARIZING_MODEL if diarize else "auto",
            response_format="json",
            language=language,
            diarize=diarize,
        )
        done = await transcribe_clip(audio, principal, clip, params, {})
        return transcript_text(done.served.value)

    async def read(
        principal: Principal, data: bytes, kind: Kind, model: str, pages: tuple[int, ...] | None
    ) -> OcrResult:
        return await read_pages(ocr, principal, data, kind, model=model, pages=pages)

    return Capabilities(
        transcribe=transcribe,
        measure_clip=measured_clip,
        diarizing_model=DIARIZING_MODEL,
        read_pages=read,
        ocr_kinds=frozenset(OCR_KINDS),
        local_ocr_model=LOCAL_OCR_MODEL,
        embed=endpoint(serve_embeddings, retrieval),
    )


def _audio(state: AppState) -> Mounted:
    return Mounted(
        (audio_blueprint(state.audio),),
        tuple(audio_routes(state.audio)),
        {TRANSCRIPTIONS_PATH: TRANSCRIPTION_UPLOAD_LIMIT},
    )


def _pipelines(state: AppState) -> Mounted:
    # Audio in a form or as base64.
    return Mounted(
        (pipelines_blueprint(state.pipelines),),
        upload_limits={PIPELINES_PATH: PIPELINE_BODY_LIMIT},
    )


def _documents(state: AppState) -> Mounted:
    documents = state.documents_services
    return Mounted(
        (documents_blueprint(documents),),
        workers=(
            partial(document_worker.run, documents),
            partial(retention.run, documents),
        ),
    )


def _realtime(state: AppState) -> Mounted:
    # The realtime family's sessions run on the pipelines family's cascades.
    realtime = RealtimeServices(
        state.auth,
        state.settings,
        PipelineSessions(state.pipelines),
        NativeRelays(state.engine, state.admission),
    )
    return Mounted((realtime_blueprint(realtime),))


def _files(state: AppState) -> Mounted:
    files = state.files_services
    return Mounted(
        (files_blueprint(files),),
        upload_limits=file_upload_limits(LARGEST_UPLOAD),
        workers=(partial(file_worker.run, files),),
    )


def _ocr(state: AppState) -> Mounted:
    return Mounted((ocr_blueprint(state.ocr),))


MOUNTS: Mapping[str, Callable[[AppState], Mounted]] = {
    "audio": _audio,
    "pipelines": _pipelines,
    "realtime": _realtime,
    "files": _files,
    "documents": _documents,
    "ocr": _ocr,
}
