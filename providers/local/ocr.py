"""The `local` OCR engine: Tesseract on the gateway's own machine, no network.

Chosen over RapidOCR after measuring both on a rendered line of text: both read it
exactly, Tesseract in 0.3 s against 0.7-1.1 s, and Tesseract comes from Debian
(`tesseract-ocr`, with its English model) where RapidOCR brings about 330 MB of ONNX
runtime and models. `tesserocr` calls the library in-process (no subprocess per page,
unlike `pytesseract`); its wheel bundles libtesseract, and the trained data comes from the
Debian package (`TESSDATA_PREFIX` or the Debian path below).

Blocking: a Tesseract handle is not thread-safe, so each call makes its own. `read_document`
runs the pages in worker threads, as many at once as its `CapacityLimiter` allows.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from providers.ocr_types import OcrPage, OcrRequest, OcrResult
from providers.types import Usage

DEBIAN_TESSDATA = Path("/usr/share/tesseract-ocr/5/tessdata")
# ISO 639-1 hints (what the API takes) to Tesseract's model names.
_LANGUAGES = {"en": "eng", "fr": "fra", "de": "deu", "es": "spa", "it": "ita", "pt": "por"}


class OcrEngineError(Exception):
    """The image cannot be decoded, or the engine is not installed."""


@attrs.frozen
class OcrText:
    text: str
    confidence: float  # 0-1, Tesseract's mean word confidence


def tessdata_path() -> str:
    return os.environ.get("TESSDATA_PREFIX") or str(DEBIAN_TESSDATA)


def installed_languages() -> frozenset[str]:
    path = Path(tessdata_path())
    return frozenset(p.stem for p in path.glob("*.traineddata")) - {"osd"}


def language_arg(hints: Sequence[str] | None) -> str:
    """Tesseract's `lang` for the hints: the installed ones among them, else English."""
    available = installed_languages()
    wanted = [_LANGUAGES.get(h.lower()[:2], h) for h in hints or ()]
    chosen = [name for name in wanted if name in available]
    return "+".join(dict.fromkeys(chosen)) or "eng"


def read_image(data: bytes, *, languages: str = "eng") -> OcrText:
    """The text of one encoded image (PNG, JPEG, TIFF, BMP, WebP, GIF)."""
    import tesserocr
    from PIL import Image, UnidentifiedImageError

    try:
        image: Image.Image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise OcrEngineError(f"the image cannot be decoded: {exc}") from None
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    try:
        with tesserocr.PyTessBaseAPI(path=tessdata_path(), lang=languages) as api:
            api.SetImage(image)
            text = api.GetUTF8Text()
            confidence = api.MeanTextConf()
    except RuntimeError as exc:
        raise OcrEngineError(f"Tesseract failed: {exc}") from None
    return OcrText(text.strip(), max(0, confidence) / 100.0)


def read_text(data: bytes) -> str:
    """`read_image`'s text alone, in English: the extraction pipeline's OCR reader."""
    return read_image(data).text


@attrs.frozen
class PageSource:
    """One page to read: its text layer (a PDF page that has one) or its image(s)."""

    number: int
    text: str | None = None
    images: tuple[bytes, ...] = ()


def page_sources(data: bytes, content_type: str) -> list[PageSource]:
    """The document's pages. A PDF page with a text layer needs no OCR; a scanned one gives
    its embedded images; each frame of a TIFF is a page; any other image is one page."""
    if content_type == "application/pdf":
        from pypdf import PdfReader

        sources = []
        for number, page in enumerate(PdfReader(io.BytesIO(data)).pages, start=1):
            text = (page.extract_text() or "").strip()
            if text:
                sources.append(PageSource(number, text=text))
            else:
                sources.append(PageSource(number, images=tuple(i.data for i in page.images)))
        return sources
    if content_type == "image/tiff":
        return [PageSource(n, images=(frame,)) for n, frame in enumerate(_frames(data), 1)]
    return [PageSource(1, images=(data,))]


def _frames(data: bytes) -> list[bytes]:
    from PIL import Image, ImageSequence

    frames = []
    with Image.open(io.BytesIO(data)) as image:
        for frame in ImageSequence.Iterator(image):
            out = io.BytesIO()
            frame.convert("RGB").save(out, "PNG")
            frames.append(out.getvalue())
    return frames


def _read_page(source: PageSource, languages: str) -> OcrPage:
    if source.text is not None:
        return OcrPage(number=source.number, text=source.text, confidence=1.0)
    read = [read_image(image, languages=languages) for image in source.images]
    text = "\n".join(r.text for r in read if r.text)
    confidence = min((r.confidence for r in read if r.text), default=0.0)
    return OcrPage(number=source.number, text=text, confidence=confidence)


async def read_document(
    request: OcrRequest, sources: Sequence[PageSource], limiter: trio.CapacityLimiter
) -> OcrResult:
    """Read the requested pages of `sources`, several at once within `limiter`.

    Cancellation: pages not started are dropped at once; a page already in Tesseract
    finishes in its thread (it cannot be interrupted) and its result is discarded.
    """
    wanted = [s for s in sources if request.pages is None or s.number in request.pages]
    languages = language_arg(request.languages)
    results: dict[int, OcrPage] = {}

    async def one(source: PageSource) -> None:
        results[source.number] = await trio.to_thread.run_sync(
            _read_page, source, languages, limiter=limiter
        )

    async with trio.open_nursery() as nursery:
        for source in wanted:
            nursery.start_soon(one, source)
    pages = tuple(results[s.number] for s in wanted)
    return OcrResult(
        model=request.model,
        pages=pages,
        total_pages=len(sources),
        usage=Usage(pages=len(pages)),
    )
