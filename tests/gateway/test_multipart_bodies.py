"""Every multipart endpoint reads its body with the one reader (`gateway.platform.multipart`),
so a body that stops before its closing boundary is the same 400 everywhere, before any
work is done or billed (transcriptions and translations once transcribed it).
"""

from __future__ import annotations

import httpx
import pytest

from gateway.app.server import RunningGateway
from tests.providers.wav import square_wave_wav

from . import documents

BOUNDARY = "gatewayboundary41"


def cut_short(fields: dict[str, str], name: str, data: bytes) -> bytes:
    """A multipart body with every part complete and no closing boundary after them."""
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    return b"".join(parts) + head.encode() + data + b"\r\n"


WAV = square_wave_wav(1.0)
CASES = {
    "transcriptions": ("/v1/audio/transcriptions", {"model": "whisper-1"}, "a.wav", WAV),
    "translations": ("/v1/audio/translations", {"model": "whisper-1"}, "a.wav", WAV),
    "files": ("/v1/files", {"purpose": "assistants"}, "a.txt", b"plain text"),
    "ocr": ("/v1/ocr", {}, "a.png", documents.text_image(["Invoice 4711"])),
    "data documents": ("/v1/data/documents", {}, "a.md", b"# Notes\n\nSome words."),
}


@pytest.mark.parametrize("case", CASES)
async def test_a_body_without_its_closing_boundary_is_refused_everywhere(
    http: httpx.AsyncClient, gateway: RunningGateway, case: str
) -> None:
    path, fields, name, data = CASES[case]
    answer = await http.post(
        path,
        content=cut_short(fields, name, data),
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["message"] == "The multipart body ended early."
    assert error["type"] == "invalid_request_error"
    await gateway.state.usage.flush()
    billed = await gateway.state.db.run(
        lambda d: d.execute("SELECT count(*) FROM usage_records WHERE cost_usd > 0").fetchone()
    )
    assert billed[0] == 0  # nothing was transcribed, read or charged
