"""Secret material: API key generation and hashing, and encryption of provider credentials.

API keys are never stored: the store keeps their SHA-256 (to find a key from a bearer
token) and a hint (prefix and last four characters, to show in listings). A SHA-256 is
enough here, unlike for passwords, because the keys carry 240 bits of randomness.

Provider credentials must be given back to upstreams, so they are encrypted (Fernet:
AES-128-CBC with HMAC-SHA256) under one master key, read from the environment or from a
`secret.key` file beside the database.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import attrs
from cryptography.fernet import Fernet, InvalidToken

logger = logging.getLogger(__name__)

KeyKind = Literal["dev", "prod", "admin", "tenant"]
KEY_KINDS: tuple[KeyKind, ...] = get_args(KeyKind)
SECRET_KEY_ENV = "GATEWAY_SECRET_KEY"
SECRET_KEY_FILENAME = "secret.key"
_RANDOM_BYTES = 30  # 30 bytes -> exactly 40 url-safe base64 characters


def key_prefix(kind: KeyKind) -> str:
    """The public prefix of a key of this kind, e.g. `gw_prod_`."""
    return f"gw_{kind}_"


def new_api_key(kind: KeyKind) -> str:
    """A fresh API key: `gw_<kind>_` followed by 40 url-safe random characters."""
    if kind not in KEY_KINDS:
        raise ValueError(f"unknown key kind {kind!r}")
    return key_prefix(kind) + secrets.token_urlsafe(_RANDOM_BYTES)


def hash_key(key: str) -> str:
    """The SHA-256 hex digest under which a key is stored and looked up."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@attrs.frozen
class KeyHint:
    """What may be shown of a key after its creation."""

    prefix: str
    last_four: str


def key_hint(key: str) -> KeyHint:
    """The key's known prefix (empty if it has none, e.g. an operator-chosen key) and last four."""
    prefix = next((key_prefix(k) for k in KEY_KINDS if key.startswith(key_prefix(k))), "")
    return KeyHint(prefix=prefix, last_four=key[-4:])


class CipherError(Exception):
    """Ciphertext that this master key cannot decrypt (wrong key, or tampered data)."""


class CredentialCipher:
    """Encrypts credential objects (e.g. `{"api_key": ...}`) for storage at rest."""

    def __init__(self, master_key: bytes | str) -> None:
        try:
            self._fernet = Fernet(master_key)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                "the master key must be a Fernet key (32 bytes, url-safe base64)"
            ) from exc

    def encrypt(self, credentials: Mapping[str, Any]) -> str:
        plaintext = json.dumps(dict(credentials), separators=(",", ":")).encode("utf-8")
        return self._fernet.encrypt(plaintext).decode("ascii")

    def decrypt(self, ciphertext: str) -> dict[str, Any]:
        try:
            plaintext = self._fernet.decrypt(ciphertext.encode("ascii"))
        except InvalidToken as exc:
            raise CipherError("credentials cannot be decrypted with this master key") from exc
        value = json.loads(plaintext)
        if not isinstance(value, dict):
            raise CipherError("decrypted credentials are not a JSON object")
        return value


def load_or_create_cipher(data_dir: Path | None, env: Mapping[str, str]) -> CredentialCipher:
    """The cipher for this deployment.

    Precedence: `GATEWAY_SECRET_KEY` in `env`; else `<data_dir>/secret.key`, created with
    mode 0600 on first use; else (no data dir: tests, in-memory runs) a fresh random key,
    which makes stored credentials unreadable after a restart, as an in-memory store is.
    Blocking (file I/O): call at start-up.
    """
    from_env = env.get(SECRET_KEY_ENV)
    if from_env:
        return CredentialCipher(from_env.strip())
    if data_dir is None:
        return CredentialCipher(Fernet.generate_key())
    return CredentialCipher(_load_or_create_key_file(data_dir / SECRET_KEY_FILENAME))


def _load_or_create_key_file(path: Path) -> bytes:
    """Read the key file, or create it atomically (O_EXCL) readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key_file(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    logger.info("created a new master key for provider credentials at %s", path)
    return key


def _read_key_file(path: Path) -> bytes:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        logger.warning("%s is readable by other users (mode %o); use 0600", path, mode)
    return path.read_bytes().strip()
