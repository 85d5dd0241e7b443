"""A whole gateway (as in tests/gateway) with the status workers driven by the tests.

Probes, the incident monitor and the alert evaluator do not run on timers here: tests call
`probe_round`, `incident_monitor.check` and `alert_evaluator.evaluate_all` themselves with
the moment they choose, so nothing depends on sleeping. The delivery worker runs as in
production; the local receivers are allowed through the SSRF guard by the operator
setting, and retries start after 10 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY, gateway, http
from tests.status.receivers import SmtpReceiver, WebhookReceiver

__all__ = ["ADMIN_KEY", "gateway", "http"]


@pytest.fixture
async def smtp(nursery: trio.Nursery) -> SmtpReceiver:
    receiver = SmtpReceiver()
    await nursery.start(receiver.serve)
    return receiver


@pytest.fixture
async def receiver(nursery: trio.Nursery) -> WebhookReceiver:
    hook = WebhookReceiver()
    await nursery.start(hook.serve)
    return hook


@pytest.fixture
def settings(tmp_path: Path, smtp: SmtpReceiver) -> Settings:
    return Settings(
        host="127.0.0.1",
        port=0,
        data_dir=tmp_path / "data",
        demo=True,
        admin_key=ADMIN_KEY,
        sim_ttft_ms=0,
        sim_tokens_per_second=0,
        shutdown_grace_s=2.0,
        health_probe_interval_s=0,
        incident_check_interval_s=0,
        alert_eval_interval_s=0,
        webhook_allowed_hosts="127.0.0.1",
        webhook_retry_base_s=0.01,
        smtp_host="127.0.0.1",
        smtp_port=smtp.port,
    )
