"""`pip install ai-gateway` (here: this tree, into a fresh venv) is the core: none of the
extras' packages is installed, and the gateway serves chat with the simulated upstreams
as `make serve` starts it, its audio and files routes answering 501 with the command to
add them.

A real install, with the machine's pip configuration and cache (a minute or so; bounded
by `INSTALL_DEADLINE_S`). The tree is copied first, so that the build writes nothing into
the working tree and two runs never share a build directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import trio

from gateway.platform.extras import EXTRAS
from tests.gateway.conftest import ADMIN_KEY
from tests.install.test_extras_table import OPTIONAL, _name

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "gateway", "providers", "store", "streams", "docs")
INSTALL_DEADLINE_S = 600
START_DEADLINE_S = 60
# Heavy packages the extras bring in with them (not listed by name in pyproject.toml).
TRANSITIVE = {
    "ctranslate2",
    "onnxruntime",
    "spacy",
    "thinc",
    "tokenizers",
    "pandas",
    "psycopg-binary",
}


async def _install_core(tmp_path: Path) -> Path:
    """A fresh venv with this tree installed (no extra); its `bin` directory."""
    tree = tmp_path / "tree"
    await trio.to_thread.run_sync(_copy_tree, tree)
    venv = tmp_path / "venv"
    await trio.run_process([sys.executable, "-m", "venv", "--without-pip", venv])
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install"]
    with trio.fail_after(INSTALL_DEADLINE_S):
        await trio.run_process([*pip, "--quiet", "--disable-pip-version-check", tree])
    return venv / "bin"


def _copy_tree(tree: Path) -> None:
    tree.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tree / name)


async def _installed(bin_dir: Path) -> set[str]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
    )
    listing = await trio.run_process([bin_dir / "python", "-c", code], capture_stdout=True)
    return {_name(name) for name in json.loads(listing.stdout)}


async def _banner(output: trio.abc.ReceiveStream) -> str:
    """The start-up banner, once printed (the line after the families is blank)."""
    text = b""
    with trio.fail_after(START_DEADLINE_S):
        while b"\n\n" not in text:
            chunk = await output.receive_some()
            assert chunk, f"the gateway exited: {text.decode()}"
            text += chunk
    return text.decode()


async def test_the_core_installs_without_the_extras_and_serves_chat(tmp_path: Path) -> None:
    bin_dir = await _install_core(tmp_path)
    installed = await _installed(bin_dir)
    assert "ai-gateway" in installed and "trio" in installed
    extras = {_name(r) for extra in EXTRAS for r in OPTIONAL[extra.name]}
    assert not installed & (extras | TRANSITIVE)
    env = dict(os.environ, GATEWAY_ADMIN_KEY=ADMIN_KEY, GATEWAY_SIM_TTFT_MS="0")
    command = [bin_dir / "gateway", "serve", "--demo", "--host", "127.0.0.1", "--port", "0"]
    process = await trio.lowlevel.open_process(
        [*command, "--data-dir", tmp_path / "data"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        banner = await _banner(process.stdout)
        await _serves_chat_and_refuses_audio(banner)
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            exited = await process.wait()
    assert exited == 0
    assert "not installed: audio, pipelines, realtime (pip install 'ai-gateway[audio]')" in banner
    assert "not installed: documents, files, ocr (pip install 'ai-gateway[files]')" in banner


async def _serves_chat_and_refuses_audio(banner: str) -> None:
    found = re.search(r"gateway listening on (http://\S+)", banner)
    assert found is not None, banner
    url = found.group(1)
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=ADMIN_KEY, max_retries=0) as sdk:
        answer = await sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
        )
        assert answer.choices[0].message.content
        stream = await sdk.chat.completions.create(
            model="claude-sonnet-4-5",
            messages=[{"role": "user", "content": "Hello"}],
            stream=True,
        )
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        embedded = await sdk.embeddings.create(model="text-embedding-3-small", input="Hello")
        assert len(embedded.data[0].embedding) == 1536
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {ADMIN_KEY}"}) as http:
        speech = await http.post(url + "/v1/audio/speech", json={"model": "tts-1"})
        assert speech.status_code == 501
        assert speech.json()["error"]["install"] == "pip install 'ai-gateway[audio]'"
        performance = await http.get(url + "/v1/management/analytics/performance")
        assert performance.status_code == 200, performance.text
