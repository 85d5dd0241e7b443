from __future__ import annotations

import hashlib
import re
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from store.secrets import (
    SECRET_KEY_ENV,
    SECRET_KEY_FILENAME,
    CipherError,
    CredentialCipher,
    KeyHint,
    hash_key,
    key_hint,
    load_or_create_cipher,
    new_api_key,
)


@pytest.mark.parametrize("kind", ["dev", "prod", "admin", "tenant"])
def test_new_api_key_shape(kind: str) -> None:
    key = new_api_key(kind)  # type: ignore[arg-type]
    assert re.fullmatch(rf"gw_{kind}_[A-Za-z0-9_-]{{40}}", key)


def test_new_api_keys_differ() -> None:
    assert len({new_api_key("prod") for _ in range(100)}) == 100


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        new_api_key("root")  # type: ignore[arg-type]


def test_hash_key_is_sha256_hex() -> None:
    assert hash_key("abc") == hashlib.sha256(b"abc").hexdigest()


def test_key_hint() -> None:
    assert key_hint("gw_admin_abcdefWXYZ") == KeyHint(prefix="gw_admin_", last_four="WXYZ")
    assert key_hint("operator-chosen-1234") == KeyHint(prefix="", last_four="1234")


def test_cipher_round_trip_hides_plaintext() -> None:
    cipher = CredentialCipher(Fernet.generate_key())
    token = cipher.encrypt({"api_key": "sk-very-secret", "organization": "org-1"})
    assert "sk-very-secret" not in token
    assert cipher.decrypt(token) == {"api_key": "sk-very-secret", "organization": "org-1"}


def test_wrong_key_cannot_decrypt() -> None:
    token = CredentialCipher(Fernet.generate_key()).encrypt({"api_key": "x"})
    with pytest.raises(CipherError):
        CredentialCipher(Fernet.generate_key()).decrypt(token)


def test_key_file_created_private_and_reused(tmp_path: Path) -> None:
    first = load_or_create_cipher(tmp_path, {})
    path = tmp_path / SECRET_KEY_FILENAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    content = path.read_bytes()
    token = first.encrypt({"api_key": "k"})
    second = load_or_create_cipher(tmp_path, {})
    assert second.decrypt(token) == {"api_key": "k"}
    assert path.read_bytes() == content


def test_environment_key_wins(tmp_path: Path) -> None:
    master = Fernet.generate_key().decode()
    cipher = load_or_create_cipher(tmp_path, {SECRET_KEY_ENV: master})
    assert not (tmp_path / SECRET_KEY_FILENAME).exists()
    token = cipher.encrypt({"a": 1})
    assert CredentialCipher(master).decrypt(token) == {"a": 1}


def test_invalid_environment_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Fernet"):
        load_or_create_cipher(tmp_path, {SECRET_KEY_ENV: "not-a-key"})


def test_no_data_dir_gives_a_fresh_key() -> None:
    token = load_or_create_cipher(None, {}).encrypt({"a": 1})
    with pytest.raises(CipherError):
        load_or_create_cipher(None, {}).decrypt(token)
