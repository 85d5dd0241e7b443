"""PII/PHI detection: Presidio's recognizers, offline, plus a few context-anchored patterns.

Presidio's analyzer runs with its no-op NLP engine (no spaCy model to download) and its
pattern recognizers: email, phone number (Google's `phonenumbers`), credit card (Luhn
checked), IBAN (mod-97 checked), IP address, US SSN. Its email recognizer validates the
domain with `tldextract`, whose default fetches the public suffix list from the network on
first use: it is replaced by an extractor that only reads the snapshot shipped in the
wheel. What Presidio has no offline recognizer for is matched here, anchored on the words
that announce it: dates of birth (a date after "DOB"/"date of birth"/"born"), medical
record numbers (after "MRN"/"medical record"), NPI numbers (10 digits after "NPI",
Luhn-checked with the 80840 prefix), US postal addresses (`gateway.kernels.pii.addresses`:
street or PO box, unit, city, state and ZIP, found whole), and person names after a title
or a label ("Dr.", "Mrs.", "Patient:", "Name:"). Names with no title or label come from
spaCy's English named-entity model, run offline as one more Presidio recognizer
(`gateway.kernels.pii.names`); the table test measures both.

Overlapping findings keep the most specific. Blocking and CPU-bound: the gateway runs it in
a worker process (`gateway.kernels.pii.worker`), where it holds no lock the event loop needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import attrs

from gateway.kernels.pii import addresses, names
from store.files import Finding, Page

_PRESIDIO_TYPES = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone_number",
    "CREDIT_CARD": "credit_card",
    "IBAN_CODE": "iban",
    "IP_ADDRESS": "ip_address",
    "US_SSN": "us_ssn",
    "PERSON": "person_name",
}
# Which wins when two findings overlap (higher first): checksummed and anchored kinds.
_PRECEDENCE = {
    "credit_card": 9,
    "iban": 9,
    "npi_number": 8,
    "us_ssn": 8,
    "medical_record_number": 7,
    "date_of_birth": 7,
    "email": 6,
    "ip_address": 5,
    "postal_address": 4,
    "person_name": 3,
    "phone_number": 2,
}
MIN_SCORE = 0.4
PHI_TYPES = frozenset({"medical_record_number", "npi_number"})


@attrs.frozen
class _Hit:
    type: str
    start: int
    end: int
    score: float


_SAMPLE_SSNS = frozenset({"123456789", "078051120"})


@cache
def _analyzer() -> Any:
    """Presidio's analyzer with the offline recognizers (built once, then shared: its
    `analyze` keeps no per-call state)."""
    import tldextract
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(offline(pattern_text).fqdn)

    class SampleSsnRecognizer(UsSsnRecognizer):
        """Presidio drops the published sample numbers (123-45-6789, 078-05-1120): a text
        holding one is still written as holding an SSN, and a redaction scan should say so
        (its other rules, unissued areas and groups, mixed delimiters, still apply)."""

        def invalidate_result(self, pattern_text: str) -> bool:
            digits = "".join(c for c in pattern_text if c.isdigit())
            if digits in _SAMPLE_SSNS:
                return len({c for c in pattern_text if not c.isdigit()}) > 1
            return bool(super().invalidate_result(pattern_text))

    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        OfflineEmailRecognizer(),
        PhoneRecognizer(),
        CreditCardRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
        SampleSsnRecognizer(),
        names.recognizer(),
    ):
        registry.add_recognizer(recognizer)
    engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])


_DATE = (
    r"(?:\d{4}-\d{2}-\d{2}|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}"
    r"|[A-Z][a-z]{2,8}\.? \d{1,2},? \d{4}|\d{1,2} [A-Z][a-z]{2,8} \d{4})"
)
_ANCHORED = (
    (
        "date_of_birth",
        re.compile(r"(?i:\bDOB|\bdate of birth|\bborn(?: on)?)\W{0,3}(" + _DATE + ")"),
        0.85,
    ),
    (
        "medical_record_number",
        re.compile(
            r"(?i:\bMRN|\bmedical record(?: number| no\.?| #)?)\W{0,3}([A-Z]{0,3}\d{5,10})\b"
        ),
        0.85,
    ),
    ("npi_number", re.compile(r"\bNPI\W{0,3}(\d{10})\b"), 0.9),
    (
        "person_name",
        re.compile(
            r"(?:\b(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.? |(?i:\b(?:patient|name|employee|signed by)): ?)"
            r"([A-Z][a-z]+(?:[ -][A-Z][a-z]+){1,2})\b"
        ),
        0.7,
    ),
)


def _npi_valid(number: str) -> bool:
    """The NPI check digit: Luhn over the number prefixed by 80840 (CMS's rule)."""
    digits = [int(d) for d in "80840" + number]
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2 == 1:
            digit *= 2
            digit -= 9 if digit > 9 else 0
        total += digit
    return total % 10 == 0


def _anchored(text: str) -> Iterable[_Hit]:
    for kind, pattern, score in _ANCHORED:
        for match in pattern.finditer(text):
            if kind == "npi_number" and not _npi_valid(match.group(1)):
                continue
            yield _Hit(kind, match.start(1), match.end(1), score)
    for start, end, score in addresses.find(text):
        yield _Hit("postal_address", start, end, score)


def _presidio(text: str) -> Iterable[_Hit]:
    for result in _analyzer().analyze(text, language="en", score_threshold=MIN_SCORE):
        kind = _PRESIDIO_TYPES.get(result.entity_type)
        if kind is not None:
            yield _Hit(kind, result.start, result.end, float(result.score))


def _resolve(hits: Iterable[_Hit]) -> list[_Hit]:
    """Drop a hit that overlaps one more specific (or equally specific and more sure)."""
    ranked = sorted(hits, key=lambda h: (-_PRECEDENCE[h.type], -h.score, h.start))
    kept: list[_Hit] = []
    for hit in ranked:
        if all(hit.end <= k.start or hit.start >= k.end for k in kept):
            kept.append(hit)
    return sorted(kept, key=lambda h: h.start)


def mask(value: str) -> str:
    """A finding's text as reported: first and last character kept, the rest starred."""
    if len(value) <= 2:
        return "*" * len(value)
    return value[0] + "".join("*" if c.isalnum() else c for c in value[1:-1]) + value[-1]


def scan_text(text: str) -> list[tuple[str, int, int, float]]:
    """(type, start, end, confidence) of every finding in `text`."""
    hits = _resolve([*_presidio(text), *_anchored(text)])
    return [(h.type, h.start, h.end, h.score) for h in hits]


def scan(pages: Sequence[Page], separator: str) -> list[Finding]:
    """Findings over the document, offsets in its full text (pages joined by `separator`)."""
    findings: list[Finding] = []
    base = 0
    for page in pages:
        for kind, start, end, score in scan_text(page.text):
            findings.append(
                Finding(
                    type=kind,
                    text=mask(page.text[start:end]),
                    page=page.number,
                    start=base + start,
                    end=base + end,
                    confidence=score,
                    redacted=True,
                )
            )
        base += len(page.text) + len(separator)
    return findings


def classify(findings: Sequence[Finding]) -> str:
    """The sensitivity class the findings call for (when the uploader named none)."""
    kinds = {f.type for f in findings}
    if kinds & PHI_TYPES:
        return "phi"
    if kinds & {"us_ssn", "credit_card", "iban", "date_of_birth"}:
        return "restricted"
    if kinds:
        return "confidential"
    return "internal"


def redact_text(text: str) -> str:
    """`text` with every finding replaced by its type in brackets (`[EMAIL]`)."""
    pieces: list[str] = []
    last = 0
    for kind, start, end, _ in scan_text(text):
        pieces += [text[last:start], f"[{kind.upper()}]"]
        last = end
    return "".join([*pieces, text[last:]])


def redact_json(document: str) -> str:
    """A JSON document with the findings of each of its strings redacted (the request
    log's bodies): string by string, so the result is still the same JSON shape."""
    return json.dumps(_redacted(json.loads(document)), ensure_ascii=False)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value) if len(value) > 2 else value
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value
