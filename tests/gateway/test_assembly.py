"""The composition root plugs only the mounted families' hooks into the core: a family
that is off costs the core nothing (no hook of it is called)."""

from __future__ import annotations

from pathlib import Path

from gateway.agents.policy import AgentPolicy
from gateway.app.assembly import assemble
from gateway.app.families import FAMILIES
from gateway.app.server import open_state
from gateway.platform.context import note_usage
from tests.gateway.conftest import gateway_settings


async def test_a_family_not_mounted_plugs_no_hook_into_the_core(tmp_path: Path) -> None:
    settings = gateway_settings(tmp_path, usage_writer="thread")
    async with open_state(settings, {}) as state:
        assemble(state, ["chat"])
        assert not state.admission.policies  # no agents: admission asks no policy
        assert not state.engine.on_first_result  # no operator: no metrics observe
        assert list(state.engine.usage.sinks) == [state.usage.submit]  # the writer alone
        assemble(state, [family.name for family in FAMILIES])
        assert [type(policy) for policy in state.admission.policies] == [AgentPolicy]
        hooks: list[object] = list(state.engine.on_first_result)
        assert hooks == [state.metrics.upstream_first_byte]
        sinks: list[object] = list(state.engine.usage.sinks)
        # The request's context (the access log's line) and the metrics, then the writer.
        assert sinks == [note_usage, state.metrics.observe_usage, state.usage.submit]
