"""What the audio family (speech, transcription, translation, voices and their mappings)
uses, built once by the composition root."""

from __future__ import annotations

import attrs

from gateway.audio.mapping_book import VoiceMappingBook
from gateway.platform.callers import Authenticator
from gateway.platform.config import Settings
from gateway.upstream.admission import Admission
from gateway.upstream.engine import Engine
from providers.catalog import Catalog
from store.db import Database


@attrs.frozen
class AudioServices:
    engine: Engine
    admission: Admission
    auth: Authenticator
    settings: Settings
    db: Database
    # Workspaces' voice mappings by name, so speech asks no store before its audio.
    voice_mappings: VoiceMappingBook

    @property
    def catalog(self) -> Catalog:
        return self.engine.catalog
