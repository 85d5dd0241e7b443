"""`python -m bench.files [--quick]`: upload throughput and memory, OCR and extraction speed.

1. Uploads: a gateway process (demo mode, its own data dir) takes `--uploads` concurrent
   multipart uploads of `--mb` MB each, streamed by the client from a generator (the client
   holds one 1 MiB piece at a time). Reports MB/s over the whole batch and the gateway
   process's resident memory: before them, sampled while they run, and its peak (VmHWM).
   Target: 20 x 100 MB under 250 MiB RSS.
2. OCR: pages per second of the local Tesseract engine through POST /v1/ocr (model=local),
   single-page PNG scans sent `--ocr-parallel` at a time.
3. Extraction: pages per second of the PDF text extraction (pypdf) on a generated 50-page
   PDF, in this process.
4. PII scan: pages per second of the scan every processed file goes through (Presidio's
   recognizers and the person-name model) on `--pdf-pages` pages of about 2,000 characters,
   in this process, and the seconds the name model takes to load.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from functools import partial
from pathlib import Path

import httpx
import trio

from bench.procs import free_port
from bench.uploads import rss_kib, sampled_batch, streamed_multipart, wait_ready

ADMIN_KEY = "gw_admin_bench_" + secrets.token_hex(12)
PIECE = 1024 * 1024
LINE = b'{"prompt": "benchmark upload line", "completion": "ok"}\n'


def multipart(boundary: str, size: int) -> AsyncIterator[bytes]:
    """A file upload (purpose `assistants`) of `size` bytes of JSONL."""
    piece = (LINE * (PIECE // len(LINE) + 1))[:PIECE]
    file = ("d.jsonl", "application/jsonl")
    fields = {"purpose": "assistants"}
    return streamed_multipart(boundary, fields, file, head=b"", piece=piece, size=size)


async def one_upload(http: httpx.AsyncClient, size: int) -> None:
    boundary = secrets.token_hex(8)
    answer = await http.post(
        "/v1/files",
        content=multipart(boundary, size),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    answer.raise_for_status()


async def uploads(url: str, pid: int, count: int, mb: int) -> dict[str, float]:
    size = mb * 1024 * 1024
    before = rss_kib(pid)
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=600
    ) as http:
        elapsed, most = await sampled_batch(pid, count, partial(one_upload, http, size))
    return {
        "uploads": count,
        "mb_each": mb,
        "seconds": round(elapsed, 2),
        "rss_before_mib": round(before / 1024, 1),
        "mb_per_s": round(count * mb / elapsed, 1),
        "rss_max_sampled_mib": round(most / 1024, 1),
        "rss_peak_mib": round(rss_kib(pid, "VmHWM") / 1024, 1),
    }


async def ocr_pages(url: str, pages: int, parallel: int) -> dict[str, float]:
    from tests.gateway.documents import text_image

    image = text_image(["Benchmark invoice 4711 for Jane Doe", "Total due: 12.50 EUR"])
    limiter = trio.CapacityLimiter(parallel)
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=120
    ) as http:

        async def one() -> None:
            async with limiter:
                answer = await http.post(
                    "/v1/ocr", files={"file": ("p.png", image)}, data={"model": "local"}
                )
                answer.raise_for_status()

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(pages):
                nursery.start_soon(one)
        elapsed = time.perf_counter() - started
    return {"pages": pages, "parallel": parallel, "pages_per_s": round(pages / elapsed, 2)}


def extraction_pages(pages: int) -> dict[str, float]:
    from gateway.kernels.text.extraction import extract
    from tests.gateway.documents import pdf_with_text

    text = "Contract clause with enough words to fill a line of a page. " * 40
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "doc"
        path.write_bytes(pdf_with_text([text] * pages))
        started = time.perf_counter()
        extract(path, "pdf", lambda _: "")
        elapsed = time.perf_counter() - started
    return {"pages": pages, "pages_per_s": round(pages / elapsed, 1)}


def pii_pages(pages: int) -> dict[str, float]:
    from gateway.kernels.pii import detector as pii
    from gateway.kernels.pii import names
    from gateway.kernels.text import PAGE_SEPARATOR
    from store.files import Page

    started = time.perf_counter()
    names.model()
    loaded = time.perf_counter() - started
    text = "Clause 4 binds Robert Chen and Laura Fischer; notices to jane.doe@example.com. " * 25
    document = [Page(number=n, text=text) for n in range(1, pages + 1)]
    started = time.perf_counter()
    findings = pii.scan(document, PAGE_SEPARATOR)
    elapsed = time.perf_counter() - started
    return {
        "pages": pages,
        "chars_per_page": len(text),
        "pages_per_s": round(pages / elapsed, 2),
        "findings": len(findings),
        "model_load_s": round(loaded, 2),
    }


async def run(args: argparse.Namespace) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "GATEWAY_ADMIN_KEY": ADMIN_KEY, "GATEWAY_RATE_LIMITS_ENABLED": "0"}
        code = "from gateway.app.cli import main; main()"
        argv = [sys.executable, "-c", code, "serve", "--demo", "--host", "127.0.0.1",
                "--port", str(port), "--data-dir", data_dir]  # fmt: skip
        log = Path(data_dir) / "gateway.log"  # its access log would bury the figures
        with log.open("wb") as sink:
            process = await trio.lowlevel.open_process(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=sink
            )
        try:
            await wait_ready(url)
            print("uploads:", await uploads(url, process.pid, args.uploads, args.mb))
            print("ocr (local):", await ocr_pages(url, args.ocr_pages, args.ocr_parallel))
        except BaseException:
            sys.stderr.write(log.read_text(errors="replace")[-4000:])
            raise
        finally:
            process.terminate()
            with trio.move_on_after(30, shield=True):
                await process.wait()
    print("extraction (pdf):", extraction_pages(args.pdf_pages))
    print("pii scan:", pii_pages(args.pdf_pages))
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.files", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="4 x 20 MB, fewer pages")
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--ocr-pages", type=int, default=20)
    parser.add_argument("--ocr-parallel", type=int, default=4)
    parser.add_argument("--pdf-pages", type=int, default=50)
    args = parser.parse_args(argv)
    if args.quick:
        args.uploads, args.mb, args.ocr_pages, args.pdf_pages = 4, 20, 6, 10
    trio.run(run, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
