from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import attrs
import pytest
import sqlite_utils

from gateway.app import cli
from store import keys, workspaces
from store.db import open_database
from store.errors import integrity_errors
from store.keys import ALL_PERMISSIONS, ApiKeyRecord, RateLimits
from store.secrets import hash_key, new_api_key

from .conftest import T0


def _record(full_key: str, workspace_id: str = "default", **extra: object) -> ApiKeyRecord:
    return keys.new_record(
        full_key,
        workspace_id=workspace_id,
        name="ci",
        kind="prod",
        permissions=["chat", "models"],
        now=T0,
        **extra,  # type: ignore[arg-type]
    )


def _add_workspace(sdb: sqlite_utils.Database, workspace_id: str) -> None:
    workspaces.insert(
        sdb, workspaces.WorkspaceRecord(id=workspace_id, name=workspace_id, created_at=T0)
    )


def test_new_record_derives_hash_and_hint() -> None:
    full = new_api_key("prod")
    record = _record(full, rate_limits={"rpm": 60})
    assert record.id.startswith("key_")
    assert record.key_hash == hash_key(full)
    assert record.prefix == "gw_prod_"
    assert record.last_four == full[-4:]
    assert record.status == "active"
    assert record.rate_limits == RateLimits(rpm=60)
    assert record.permissions == ("chat", "models")


def test_round_trip(sdb: sqlite_utils.Database) -> None:
    record = _record(
        new_api_key("prod"),
        rate_limits=RateLimits(rpm=10, tpm=1000, daily_requests=5, concurrent=2),
        allowed_models=["gpt-4o"],
        allowed_ips=["10.0.0.0/8"],
        expires_at=T0 + timedelta(days=30),
    )
    keys.insert(sdb, record)
    assert keys.get(sdb, record.id) == record
    assert keys.find_by_hash(sdb, record.key_hash) == record


def test_clear_key_is_never_stored(tmp_path: Path) -> None:
    full = new_api_key("admin")
    db = open_database(tmp_path)
    try:
        db.run_sync(lambda d: keys.insert(d, _record(full)))
    finally:
        db.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("gateway"))
    assert hash_key(full).encode() in stored  # the search does see the database content
    assert full.encode() not in stored
    assert full[len("gw_admin_") :].encode() not in stored


def test_duplicate_hash_is_refused(sdb: sqlite_utils.Database) -> None:
    full = new_api_key("prod")
    keys.insert(sdb, _record(full))
    with pytest.raises(integrity_errors()):
        keys.insert(sdb, _record(full))


def test_unknown_workspace_is_refused(sdb: sqlite_utils.Database) -> None:
    with pytest.raises(integrity_errors()):
        keys.insert(sdb, _record(new_api_key("prod"), workspace_id="nowhere"))


def test_workspace_scoping(sdb: sqlite_utils.Database) -> None:
    _add_workspace(sdb, "ws_a")
    _add_workspace(sdb, "ws_b")
    a = _record(new_api_key("prod"), workspace_id="ws_a")
    b = _record(new_api_key("prod"), workspace_id="ws_b")
    keys.insert(sdb, a)
    keys.insert(sdb, b)
    assert keys.get(sdb, a.id, workspace_id="ws_a") == a
    assert keys.get(sdb, a.id, workspace_id="ws_b") is None
    assert keys.list_keys(sdb, "ws_a") == [a]
    assert keys.list_keys(sdb, "ws_b") == [b]
    assert keys.list_keys(sdb, "default") == []


def test_update_changes_fields_and_updated_at(sdb: sqlite_utils.Database) -> None:
    record = _record(new_api_key("prod"))
    keys.insert(sdb, record)
    later = T0 + timedelta(hours=1)
    changed = keys.update(sdb, record.id, name="renamed", rate_limits={"rpm": 5}, updated_at=later)
    assert changed == attrs.evolve(
        record, name="renamed", rate_limits=RateLimits(rpm=5), updated_at=later
    )
    assert keys.get(sdb, record.id) == changed


def test_update_refuses_identity_fields_and_unknown_keys(sdb: sqlite_utils.Database) -> None:
    record = _record(new_api_key("prod"))
    keys.insert(sdb, record)
    with pytest.raises(ValueError, match="key_hash"):
        keys.update(sdb, record.id, key_hash="x")
    with pytest.raises(TypeError):
        keys.update(sdb, record.id, colour="blue")
    assert keys.update(sdb, "key_missing", name="x") is None


def test_revoke_keeps_the_first_time(sdb: sqlite_utils.Database) -> None:
    record = _record(new_api_key("prod"))
    keys.insert(sdb, record)
    at = T0 + timedelta(minutes=5)
    revoked = keys.revoke(sdb, record.id, at)
    assert revoked is not None
    assert (revoked.status, revoked.revoked_at, revoked.updated_at) == ("revoked", at, at)
    assert keys.revoke(sdb, record.id, at + timedelta(days=1)) == revoked
    assert keys.all_active(sdb) == []
    assert keys.revoke(sdb, "key_missing", at) is None


def test_set_expiry_and_delete(sdb: sqlite_utils.Database) -> None:
    record = _record(new_api_key("prod"))
    keys.insert(sdb, record)
    expiry = T0 + timedelta(hours=24)
    updated = keys.set_expiry(sdb, record.id, expiry)
    assert updated is not None and updated.expires_at == expiry
    assert keys.delete(sdb, record.id) is True
    assert keys.delete(sdb, record.id) is False
    assert keys.get(sdb, record.id) is None


def test_touch_last_used_is_batched_and_monotonic(sdb: sqlite_utils.Database) -> None:
    first = _record(new_api_key("prod"))
    second = _record(new_api_key("dev"))
    keys.insert(sdb, first)
    keys.insert(sdb, second)
    t1, t2 = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)
    keys.touch_last_used(sdb, {first.id: t2, second.id: t1, "key_missing": t1})
    keys.touch_last_used(sdb, {first.id: t1})  # older: ignored
    assert keys.get(sdb, first.id).last_used_at == t2  # type: ignore[union-attr]
    assert keys.get(sdb, second.id).last_used_at == t1  # type: ignore[union-attr]


def test_all_active_spans_workspaces(sdb: sqlite_utils.Database) -> None:
    _add_workspace(sdb, "ws_a")
    a = _record(new_api_key("prod"), workspace_id="ws_a")
    d = _record(new_api_key("prod"))
    keys.insert(sdb, a)
    keys.insert(sdb, d)
    assert {r.id for r in keys.all_active(sdb)} == {a.id, d.id}


def test_bootstrap_admin_is_idempotent(sdb: sqlite_utils.Database) -> None:
    full = new_api_key("admin")
    created = keys.ensure_bootstrap_admin(sdb, full, "bootstrap", now=T0)
    again = keys.ensure_bootstrap_admin(sdb, full, "other name")
    assert again == created
    assert created.kind == "admin"
    assert created.workspace_id == "default"
    assert created.permissions == ALL_PERMISSIONS
    assert created.prefix == "gw_admin_"
    assert len(keys.list_keys(sdb, "default")) == 1


def test_bootstrap_does_not_revive_a_revoked_key(sdb: sqlite_utils.Database) -> None:
    full = new_api_key("admin")
    created = keys.ensure_bootstrap_admin(sdb, full, "bootstrap", now=T0)
    keys.revoke(sdb, created.id, T0)
    assert keys.ensure_bootstrap_admin(sdb, full, "bootstrap").status == "revoked"


def test_bootstrap_admin_is_its_organisations_owner(sdb: sqlite_utils.Database) -> None:
    """A new one is made an owner; one stored before the role existed becomes one."""
    assert keys.ensure_bootstrap_admin(sdb, new_api_key("admin"), "b", now=T0).role == "owner"
    full = new_api_key("admin")
    old = _record(full)
    assert old.role is None
    keys.insert(sdb, old)
    upgraded = keys.ensure_bootstrap_admin(sdb, full, "bootstrap")
    assert (upgraded.id, upgraded.role) == (old.id, "owner")
    assert keys.find_by_hash(sdb, old.key_hash) == upgraded


def test_records_are_immutable() -> None:
    record = _record(new_api_key("prod"), allowed_models=["a"])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.name = "x"  # type: ignore[misc]
    assert isinstance(record.allowed_models, tuple)


def test_naive_datetimes_are_refused(sdb: sqlite_utils.Database) -> None:
    record = attrs.evolve(_record(new_api_key("prod")), created_at=T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="naive"):
        keys.insert(sdb, record)


def test_unknown_rate_limit_field_is_refused() -> None:
    with pytest.raises(ValueError, match="burst"):
        _record(new_api_key("prod"), rate_limits={"burst": 3})


def test_rotate_stores_the_new_key_and_expires_the_old(sdb: sqlite_utils.Database) -> None:
    old = _record(new_api_key("prod"))
    keys.insert(sdb, old)
    later = T0 + timedelta(hours=1)
    new = attrs.evolve(_record(new_api_key("prod"), rotated_from=old.id), created_at=later)
    grace_end = later + timedelta(hours=24)
    updated_old = keys.rotate(sdb, old.id, new, grace_end)
    assert updated_old is not None
    assert (updated_old.expires_at, updated_old.status) == (grace_end, "active")
    assert keys.get(sdb, new.id) == new
    missing = _record(new_api_key("prod"))
    assert keys.rotate(sdb, "key_missing", missing, grace_end) is None
    assert keys.get(sdb, missing.id) is None


@pytest.mark.parametrize(("kind", "role"), [("admin", "owner"), ("prod", None)])
def test_an_admin_key_made_on_the_machine_is_an_owner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, role: str | None
) -> None:
    """`gateway keys create --type admin` makes an operator's key, as the one made at start."""
    argv = ["keys", "create", "--name", "ops", "--type", kind, "--data-dir", str(tmp_path)]
    assert cli.main(argv) == 0
    full = capsys.readouterr().out.splitlines()[0]
    found = keys.find_by_hash(sqlite_utils.Database(tmp_path / "gateway.db"), hash_key(full))
    assert found is not None and found.role == role
