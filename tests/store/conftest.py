from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests import speedups

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _real_migrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests prove the migrations and `open_database` themselves: every database
    here is migrated for real, never copied from the test process's template."""
    monkeypatch.setattr(speedups.Template, "enabled", False)
