"""LiteLLM proxy, the comparison: its own virtual environment and an offline start.

LiteLLM is never a dependency of the project. The first run creates
`bench/.litellm-venv` (git-ignored) with `python -m venv` and installs `litellm[proxy]`
there; later runs reuse it. When that fails the run goes on without LiteLLM and the
report says why. The proxy is started against the same simulator with its bundled
cost map (`LITELLM_LOCAL_MODEL_COST_MAP=True`), no database and no telemetry, so it
makes no network call beyond loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs

from bench import procs

VENV = Path(__file__).resolve().parent / ".litellm-venv"
MARKER = VENV / ".installed"
MASTER_KEY = "sk-bench-litellm-master-key"
MODEL = "gpt-4o-mini"
READY_DEADLINE_S = 180.0


@attrs.frozen
class LiteLLMSetup:
    """The proxy's executable, or why there is none."""

    executable: Path | None
    version: str | None
    note: str


def ensure_venv(log_dir: Path) -> LiteLLMSetup:
    """Create and fill the venv once (a minute or two), then reuse it."""
    executable = VENV / "bin" / "litellm"
    if not (MARKER.exists() and executable.exists()):
        print("installing LiteLLM into bench/.litellm-venv (first run only)...", flush=True)
        log = log_dir / "litellm-install.log"
        failure = _install(log)
        if failure:
            return LiteLLMSetup(None, None, f"LiteLLM install failed ({failure}); see {log}")
        MARKER.touch()
    version = _version()
    return LiteLLMSetup(executable, version, f"litellm {version} in bench/.litellm-venv")


def _install(log: Path) -> str | None:
    python = VENV / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [str(python), "-m", "pip", "install", "--quiet", "litellm[proxy]"],
    ]
    with log.open("w") as out:
        for argv in steps:
            try:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"{argv[2:]}: {exc}"
            if done.returncode != 0:
                return f"`{' '.join(argv[1:])}` exited with {done.returncode}"
    return None


def _version() -> str | None:
    python = VENV / "bin" / "python"
    code = "import importlib.metadata as m; print(m.version('litellm'))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or None


def write_config(path: Path, sim_port: int) -> Path:
    """One model, `gpt-4o-mini`, served by the simulator's OpenAI API."""
    path.write_text(
        f"""model_list:
  - model_name: {MODEL}
    litellm_params:
      model: openai/{MODEL}
      api_base: http://127.0.0.1:{sim_port}/openai/v1
      api_key: sim-key
litellm_settings:
  telemetry: false
  drop_params: true
general_settings:
  master_key: {MASTER_KEY}
"""
    )
    return path


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.pop("DATABASE_URL", None)
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        NO_DOCS="True",
        DISABLE_ADMIN_UI="True",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def launch(
    setup: LiteLLMSetup,
    *,
    sim_port: int,
    port: int,
    cores: tuple[int, ...],
    work: Path,
    workers: int = 1,
    name: str = "litellm",
) -> procs.Proc:
    """Start the proxy with `workers` workers (one, except in section 7); `ready_url(port)`
    answers once it serves."""
    assert setup.executable is not None
    config = write_config(work / "litellm.yaml", sim_port)
    argv = [str(setup.executable), "--config", str(config), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--num_workers", str(workers)]
    if workers > 1:
        # uvicorn's supervisor kills a child that has not answered its health check
        # within 5 s, and importing the proxy takes longer on a loaded machine: the
        # children would be started and killed forever.
        argv += ["--timeout_worker_healthcheck", str(int(READY_DEADLINE_S))]
    return procs.start(name, argv, cores=cores, log_dir=work, env=offline_env(), cwd=work)


def ready_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/health/liveliness"


def started_workers(log: bytes) -> int:
    """Workers that have read their configuration, by the line each prints as its app
    starts (uvicorn's own lines are off at `LITELLM_LOG=ERROR`); one answering the
    ready URL does not mean the others do."""
    return log.count(b"Proxy initialized with Config")
