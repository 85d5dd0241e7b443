from __future__ import annotations

from datetime import timedelta

import pytest
import sqlite_utils
from cryptography.fernet import Fernet

from store import providers, workspaces
from store.secrets import CredentialCipher

from .conftest import T0


@pytest.fixture
def cipher() -> CredentialCipher:
    return CredentialCipher(Fernet.generate_key())


def _configure(
    sdb: sqlite_utils.Database, cipher: CredentialCipher, workspace_id: str = "default"
) -> providers.ProviderRecord:
    return providers.upsert_configuration(
        sdb,
        workspace_id=workspace_id,
        provider_id="openai",
        encrypted_credentials=cipher.encrypt({"api_key": "sk-secret"}),
        settings={"default_model": "gpt-4o"},
        at=T0,
    )


def test_configure_and_read_back(sdb: sqlite_utils.Database, cipher: CredentialCipher) -> None:
    record = _configure(sdb, cipher)
    assert record.status == "active"
    assert record.configured_at == T0
    assert providers.get(sdb, "default", "openai") == record
    assert cipher.decrypt(record.encrypted_credentials) == {"api_key": "sk-secret"}
    assert "sk-secret" not in repr(record)
    assert "encrypted_credentials" not in repr(record)
    stored = sdb.execute("SELECT * FROM providers").fetchall()
    assert "sk-secret" not in repr(stored)


def test_reconfigure_replaces(sdb: sqlite_utils.Database, cipher: CredentialCipher) -> None:
    _configure(sdb, cipher)
    later = T0 + timedelta(hours=1)
    again = providers.upsert_configuration(
        sdb,
        workspace_id="default",
        provider_id="openai",
        encrypted_credentials=cipher.encrypt({"api_key": "sk-2"}),
        settings={},
        at=later,
    )
    assert providers.list_for_workspace(sdb, "default") == [again]
    assert again.settings == {}


def test_workspace_scoping(sdb: sqlite_utils.Database, cipher: CredentialCipher) -> None:
    workspaces.insert(sdb, workspaces.WorkspaceRecord(id="ws_b", name="B", created_at=T0))
    _configure(sdb, cipher)
    assert providers.get(sdb, "ws_b", "openai") is None
    assert providers.list_for_workspace(sdb, "ws_b") == []
    other = _configure(sdb, cipher, workspace_id="ws_b")
    assert providers.list_for_workspace(sdb, "ws_b") == [other]
    assert len(providers.list_for_workspace(sdb, "default")) == 1


def test_updates_set_their_timestamps(sdb: sqlite_utils.Database, cipher: CredentialCipher) -> None:
    _configure(sdb, cipher)
    t1, t2, t3, t4 = (T0 + timedelta(minutes=n) for n in (1, 2, 3, 4))
    settings = providers.update_settings(sdb, "default", "openai", {"default_model": "o1"}, t1)
    assert settings is not None
    assert (settings.settings, settings.updated_at) == ({"default_model": "o1"}, t1)
    creds = providers.update_credentials(sdb, "default", "openai", "ciphertext", t2)
    assert creds is not None
    assert (creds.encrypted_credentials, creds.credentials_updated_at) == ("ciphertext", t2)
    disabled = providers.set_status(sdb, "default", "openai", "disabled", t3)
    assert disabled is not None
    assert (disabled.status, disabled.disabled_at, disabled.updated_at) == ("disabled", t3, t3)
    enabled = providers.set_status(sdb, "default", "openai", "active", t4)
    assert enabled is not None
    assert (enabled.status, enabled.disabled_at) == ("active", None)
    assert enabled.configured_at == T0
    assert providers.get(sdb, "default", "openai") == enabled


def test_changes_to_missing_provider_return_none(sdb: sqlite_utils.Database) -> None:
    assert providers.update_settings(sdb, "default", "cohere", {}, T0) is None
    assert providers.update_credentials(sdb, "default", "cohere", "x", T0) is None
    assert providers.set_status(sdb, "default", "cohere", "disabled", T0) is None


def test_delete(sdb: sqlite_utils.Database, cipher: CredentialCipher) -> None:
    _configure(sdb, cipher)
    assert providers.delete(sdb, "default", "openai") is True
    assert providers.delete(sdb, "default", "openai") is False
    assert providers.get(sdb, "default", "openai") is None
