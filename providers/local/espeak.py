"""eSpeak NG through ctypes: text in, 16-bit mono PCM out, no network and no program to run.

The `espeakng-loader` wheel ships `libespeak-ng.so` and its voice data, so nothing is
installed system-wide. The library keeps its synthesiser in global variables (the voice,
the rate, the callback), and the dynamic loader maps one image per file, so every `Espeak`
loads a private copy of the library (copied to a temporary file, loaded, unlinked): two
engines in one process (the local provider and the simulator in demo mode, two gateways in
a test) never share state, and no module-level engine is needed. An `Espeak` serialises
its own calls with a lock and is meant to be used from worker threads
(`trio.to_thread.run_sync`) under its owner's limiter. Synthesis is fast (far faster than
real time), so holding the lock for one request at a time is the simple, correct choice.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading

from providers.audio_codec import Pcm

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_ESPEAK_RATE = 1
_ESPEAK_PITCH = 3
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_DEFAULT_WPM = 175

_Callback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class EspeakError(RuntimeError):
    """The library refused a call (unknown voice, failed initialisation)."""


class Espeak:
    """One loaded eSpeak NG library; `synthesize` is thread-safe and blocking."""

    def __init__(self) -> None:
        import espeakng_loader  # the `[audio]` extra's: loaded with the first engine

        self._lib = _private_library(espeakng_loader.get_library_path())
        self._lock = threading.Lock()
        self._chunks: list[bytes] = []
        self._callback = _Callback(self._collect)  # kept alive as long as the library uses it
        data = espeakng_loader.get_data_path().encode()
        self._lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p]
        self._lib.espeak_Initialize.argtypes += [ctypes.c_int]
        rate = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data, 0)
        if rate <= 0:
            raise EspeakError("eSpeak NG did not initialise")
        self.rate: int = rate
        self._lib.espeak_SetSynthCallback(self._callback)
        self._voice: str | None = None

    def _collect(self, wav: ctypes.Array[ctypes.c_short] | None, count: int, _: object) -> int:
        if wav and count > 0:
            self._chunks.append(ctypes.string_at(wav, count * 2))
        return 0  # 0 = go on synthesising

    def synthesize(self, text: str, *, voice: str = "en-us", speed: float = 1.0) -> Pcm:
        """`text` spoken by `voice` at `speed` times the normal rate, as PCM at `self.rate`."""
        with self._lock:
            self._set_voice(voice)
            wpm = max(80, min(450, round(_DEFAULT_WPM * speed)))
            self._lib.espeak_SetParameter(_ESPEAK_RATE, wpm, 0)
            self._chunks = []
            raw = text.encode("utf-8") + b"\0"
            status = self._lib.espeak_Synth(
                raw, len(raw), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            if status != 0:
                raise EspeakError(f"eSpeak NG could not synthesise (status {status})")
            self._lib.espeak_Synchronize()
            samples, self._chunks = b"".join(self._chunks), []
        return Pcm(samples, self.rate)

    def _set_voice(self, voice: str) -> None:
        if voice == self._voice:
            return
        if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EspeakError(f"eSpeak NG has no voice {voice!r}")
        self._voice = voice


def _private_library(library: str) -> ctypes.CDLL:
    """A copy of libespeak-ng of this engine's own (its globals included): loaded from a
    temporary file that is removed at once (the mapping outlives the name)."""
    fd, path = tempfile.mkstemp(prefix="libespeak-ng-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as copy, open(library, "rb") as lib:
            shutil.copyfileobj(lib, copy)
        return ctypes.CDLL(path)
    finally:
        os.unlink(path)


class LazyEspeak:
    """An engine built on first use (loading costs ~20 ms), owned by whoever made this:
    the local provider and the simulator's audio each hold one. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engine: Espeak | None = None

    def __call__(self) -> Espeak:
        with self._lock:
            if self._engine is None:
                self._engine = Espeak()
            return self._engine
