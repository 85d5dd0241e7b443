from __future__ import annotations

from datetime import UTC, datetime

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
