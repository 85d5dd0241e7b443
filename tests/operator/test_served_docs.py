"""The gateway serves its documentation pages (`/docs/pages/<name>`, HTML) and every error's
`doc_url` points at the code's entry on its own errors page: under the base URL the client
used (scheme and Host), or `GATEWAY_PUBLIC_BASE_URL` when it is set."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.operator import pages
from gateway.platform.config import load_settings
from gateway.platform.doc_links import base_of, public_base_url
from providers.sim.core import Fault
from tests.gateway.conftest import ADMIN_KEY, gateway_settings
from tests.hardening.wire import connect, parse_answer, read_to_end

HELLO = [{"role": "user", "content": "Hello"}]


async def test_every_page_is_served_as_html(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        for name in sorted(pages.page_names() - {pages.INDEX}):
            answer = await anonymous.get(f"/docs/pages/{name}")
            assert answer.status_code == 200, name
            assert answer.headers["content-type"] == "text/html; charset=utf-8"
            assert answer.headers["content-security-policy"].startswith("default-src 'none'")
            assert "<h1 id=" in answer.text, name


async def test_the_index_links_every_page_at_its_served_address(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        index = await anonymous.get("/docs/pages/")
    assert index.status_code == 200
    for name in ("errors", "operations", "decisions", "api-reference"):
        assert f'href="/docs/pages/{name}"' in index.text
    assert ".md" not in index.text.split("<main>")[1]  # no link left to a Markdown file


async def test_the_pages_image_is_served(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        page = await anonymous.get("/docs/pages/operators")
        image = await anonymous.get("/docs/pages/console.png")
    assert 'src="/docs/pages/console.png"' in page.text
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "path", ["nothing-here", "errors.md", "..%2Fpyproject", "README.txt", ".hidden"]
)
async def test_an_unknown_page_is_a_404_in_the_envelope(gateway: RunningGateway, path: str) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as anonymous:
        answer = await anonymous.get(f"/docs/pages/{path}")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] in ("page_not_found", "not_found")


async def test_an_error_links_to_its_entry_on_this_gateway(
    gateway: RunningGateway,
) -> None:
    """The official client's error body carries the link; following it finds the entry."""
    async with openai.AsyncOpenAI(
        base_url=gateway.url + "/v1", api_key="gw_dev_not_a_key", max_retries=0
    ) as wrong_key:
        with pytest.raises(openai.AuthenticationError) as caught:
            await wrong_key.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["doc_url"] == f"{gateway.url}/docs/pages/errors#invalid_api_key"
    page, _, anchor = body["doc_url"].partition("#")
    async with httpx.AsyncClient(timeout=10) as browser:
        answer = await browser.get(page)
    assert answer.status_code == 200
    assert f'id="{anchor}"' in answer.text


async def test_a_management_error_links_the_same_way(gateway: RunningGateway) -> None:
    """The Quart routes (here a 404 of the management API) as the fast path."""
    async with httpx.AsyncClient(
        base_url=gateway.url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    ) as http:
        answer = await http.get("/v1/management/api-keys/key_nope")
    error = answer.json()["error"]
    assert error["doc_url"] == f"{gateway.url}/docs/pages/errors#key_not_found"


async def test_doc_url_follows_the_host_the_client_used(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as client:
        answer = await client.get(
            "/v1/models", headers={"host": "ai.example.com:8443", "authorization": "Bearer no"}
        )
    error = answer.json()["error"]
    assert error["doc_url"] == "http://ai.example.com:8443/docs/pages/errors#invalid_api_key"


async def test_a_streams_last_error_event_links_too(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """An error after the first chunk is the stream's last event: it is built inside the
    streamed body, after the handler returned, and still knows the request's base."""
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-4o-mini", stop_after_chunks=2, remaining=1))
    forced = {"provider": "openai", "service": {"cache": "skip"}}
    received = []
    with trio.fail_after(5), pytest.raises(openai.APIError) as caught:
        async for chunk in await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, stream=True, extra_body=forced
        ):
            received.append(chunk)
    assert received, "the failure came after the first chunk"
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["doc_url"] == f"{gateway.url}/docs/pages/errors#{body['code']}"


async def test_the_public_base_url_setting_wins(nursery: trio.Nursery, tmp_path: Path) -> None:
    settings = gateway_settings(
        tmp_path, usage_writer="thread", public_base_url="https://ai.example.com/gateway/"
    )
    running: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
    async with httpx.AsyncClient(base_url=running.url, timeout=10) as client:
        answer = await client.get("/v1/models", headers={"authorization": "Bearer no"})
    error = answer.json()["error"]
    assert error["doc_url"] == "https://ai.example.com/gateway/docs/pages/errors#invalid_api_key"


async def test_the_servers_own_answers_link_with_the_public_base(
    gateway: RunningGateway, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """A request the HTTP parser refuses has no Host to go by: its doc_url is the public
    base when one is set, else the page's path alone (a reference the client resolves
    against the address it called)."""
    public = gateway_settings(
        tmp_path, usage_writer="thread", public_base_url="https://ai.example.com"
    )
    behind_proxy: RunningGateway = await nursery.start(partial(run_gateway, public, env={}))
    links = []
    for running in (gateway, behind_proxy):
        async with await connect(running.url) as stream:
            await stream.send_all(b"GARBAGE\r\n\r\n")
            links.append(parse_answer(await read_to_end(stream)).error()["doc_url"])
    assert links == [
        "/docs/pages/errors#malformed_request",
        "https://ai.example.com/docs/pages/errors#malformed_request",
    ]


def test_a_malformed_host_falls_back_to_the_servers_address() -> None:
    def scope(host: bytes, scheme: str = "http") -> dict[str, object]:
        return {"scheme": scheme, "headers": [(b"host", host)], "server": ("::1", 8080)}

    assert base_of(scope(b"gw.example")) == "http://gw.example"
    assert base_of(scope(b"[::1]:9000", "wss")) == "https://[::1]:9000"
    for junk in (b'evil"/><script>', b"a b", b"", b"host:port", b"x@y"):
        assert base_of(scope(junk)) == "http://[::1]:8080", junk
    assert base_of({"scheme": "https", "headers": [], "server": None}) == "https://localhost"


def test_the_public_base_url_setting_is_checked() -> None:
    assert public_base_url(" https://ai.example.com/ ") == "https://ai.example.com"
    assert public_base_url("") is None
    for wrong in ("ai.example.com", "ftp://ai.example.com", "https://x/?a=1", "https://x/#y"):
        with pytest.raises(ValueError, match="public_base_url"):
            public_base_url(wrong)
    env = {"GATEWAY_PUBLIC_BASE_URL": "http://10.0.0.5:8080/"}
    assert load_settings(env=env).public_base_url == "http://10.0.0.5:8080"


def test_the_index_links_every_page() -> None:
    """A page nobody links is a page nobody finds: docs/README.md lists them all."""
    index = (pages.DOCS / "README.md").read_text()
    unlinked = sorted(
        name for name in pages.page_names() - {pages.INDEX} if f"]({name}.md)" not in index
    )
    assert unlinked == [], "link these pages from docs/README.md"
