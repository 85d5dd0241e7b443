"""Passwords (Argon2id) and the one-time or short-lived tokens of people.

Passwords are hashed with Argon2id (argon2-cffi's defaults: 64 MiB, 3 passes), a
memory-hard KDF, so a stolen database does not give them away cheaply. Invitation and
user tokens carry 240 random bits, so, like API keys, a SHA-256 at rest is enough; they
are looked up by digest and compared in constant time (see `store.secrets`).
Hashing a password takes tens of milliseconds of CPU: callers run it in a thread.
"""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from gateway.platform.auth import USER_TOKEN_PREFIX

INVITATION_PREFIX = "gwi_"
_RANDOM_BYTES = 30
_HASHER = PasswordHasher()
# Verified against when the email is unknown, so that a wrong email costs the same time
# as a wrong password and reveals nothing: a hash made once with `_HASHER`'s parameters
# (tests/gateway/test_password_decoy.py checks they still are). Hashing it at import cost
# every gateway's start a 64 MiB, four-lane Argon2 run, and the lanes' threads left glibc
# arenas resident for the life of the process (bench/README.md, session 7's memory).
_DECOY = (
    "$argon2id$v=19$m=65536,t=3,p=4$wXWov9JT0kakavnGn8l/ZQ"
    "$wzEqBwOT+Ulif37AFlNiXBQcoOP6S2c3cHCH4PjGJYg"
)


def new_invitation_token() -> str:
    return INVITATION_PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)


def new_user_token() -> str:
    return USER_TOKEN_PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)


def hash_password(password: str) -> str:
    """The Argon2id hash string (salt and parameters included). Blocking."""
    return _HASHER.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether `password` matches; with no hash, spend the same time and say no. Blocking."""
    try:
        return _HASHER.verify(password_hash or _DECOY, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
