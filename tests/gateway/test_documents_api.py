"""Data documents through the real HTTP interface: upload, process, read, erase, search.

The documents are made here; the simulators embed with a hashing bag of words, so texts
sharing words have similar vectors. Erasure is proven on disk: the canary string written
into a document is found in the database/WAL and blob store before, and nowhere after.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.documents import retention
from gateway.kernels.text.chunking import count_tokens
from gateway.platform.config import Settings
from tests.gateway.conftest import ADMIN_KEY

from . import documents
from .org_world import bearer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DOCS = "/v1/data/documents"
CANARY = "qxzvjwcanary7319kplm"


async def upload(http: httpx.AsyncClient, name: str, data: bytes, **fields: str) -> Any:
    response = await http.post(DOCS, files={"file": (name, data)}, data=fields)
    assert response.status_code == 200, response.text
    return response.json()


async def finished(http: httpx.AsyncClient, document_id: str) -> dict[str, Any]:
    """The document once processing has ended (polled as a client would)."""
    with trio.fail_after(60):
        while True:
            body: dict[str, Any] = (await http.get(f"{DOCS}/{document_id}")).json()
            if body["status"] in ("completed", "failed"):
                return body
            await trio.sleep(0.05)


def on_disk(data_dir: Path) -> list[bytes]:
    """Every byte the gateway keeps: the database, its WAL, and the document blob store."""
    paths = [data_dir / "gateway.db", data_dir / "gateway.db-wal"]
    paths += [p for p in (data_dir / "documents").rglob("*") if p.is_file()]
    return [p.read_bytes() for p in paths if p.exists()]


def canary_anywhere(data_dir: Path) -> bool:
    """The canary, or its tail (an index may store a term after a prefix it shares)."""
    needles = (CANARY.encode(), CANARY[-9:].encode())
    return any(n in blob for blob in on_disk(data_dir) for n in needles)


REPORT = b"""# Quarterly report

Revenue grew in every region this quarter. The sales team closed forty contracts.

# Patient notes

The patient reported mild symptoms. Follow-up is scheduled in two weeks. Reference %s.
"""


async def test_upload_processes_into_chunks_with_tokens_and_headers(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    created = await upload(
        http, "report.md", REPORT % b"none", chunk_size_tokens="100", chunk_overlap_tokens="0"
    )
    assert created["status"] in ("pending", "processing")
    assert created["name"] == "report.md"
    assert created["original_filename"] == "report.md"
    assert created["data_classification"] == "internal"
    assert created["chunking_strategy"] == "semantic"
    assert created["residency_region"] == "eu"
    assert created["retention_days"] is None
    done = await finished(http, created["id"])
    assert done["status"] == "completed", done
    assert done["embedding_model"] == "mistral-embed"  # the catalog's EU provider
    assert done["chunk_count"] == 2
    assert done["processing_time_seconds"] >= 0
    page = (await http.get(f"{DOCS}/{created['id']}/chunks")).json()
    assert page["total_chunks"] == 2 and page["has_more"] is False
    headers = [c["section_header"] for c in page["chunks"]]
    assert headers == ["Quarterly report", "Patient notes"]
    for chunk in page["chunks"]:
        assert chunk["token_count"] == count_tokens(chunk["content"])
        assert chunk["page_number"] == 1
    assert page["total_tokens"] == sum(c["token_count"] for c in page["chunks"])
    window = (await http.get(f"{DOCS}/{created['id']}/chunks?limit=1&offset=1")).json()
    assert [c["chunk_index"] for c in window["chunks"]] == [1]
    assert window["has_more"] is False


async def test_list_pages_and_filters(http: httpx.AsyncClient, gateway: RunningGateway) -> None:
    ids = []
    for i, classification in enumerate(("public", "internal", "confidential")):
        made = await upload(
            http, f"n{i}.txt", b"Plain text number %d." % i, data_classification=classification
        )
        ids.append(made["id"])
    for document_id in ids:
        await finished(http, document_id)
    first = (await http.get(f"{DOCS}?page_size=2")).json()
    assert first["total"] == 3 and first["page"] == 1 and first["has_more"] is True
    assert [d["id"] for d in first["documents"]] == [ids[2], ids[1]]
    second = (await http.get(f"{DOCS}?page_size=2&page=2")).json()
    assert [d["id"] for d in second["documents"]] == [ids[0]] and second["has_more"] is False
    public = (await http.get(f"{DOCS}?classification=public")).json()
    assert [d["id"] for d in public["documents"]] == [ids[0]]
    done = (await http.get(f"{DOCS}?status=completed")).json()
    assert done["total"] == 3


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"chunking_strategy": "sentences"}, "chunking_strategy"),
        ({"chunk_size_tokens": "99"}, "chunk_size_tokens"),
        ({"chunk_size_tokens": "2001"}, "chunk_size_tokens"),
        ({"chunk_overlap_tokens": "201"}, "chunk_overlap_tokens"),
        ({"data_classification": "secret"}, "data_classification"),
        ({"retention_days": "-1"}, "retention_days"),
        ({"residency_region": "EU!"}, "residency_region"),
        ({"metadata": "[1]"}, "metadata"),
        ({"colour": "blue"}, "colour"),
    ],
)
async def test_bad_parameters_are_400(
    http: httpx.AsyncClient, gateway: RunningGateway, fields: dict[str, str], param: str
) -> None:
    response = await http.post(DOCS, files={"file": ("a.txt", b"text")}, data=fields)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
    assert list((gateway.state.documents.blobs.root / "tmp").iterdir()) == []


async def test_type_and_size_limits(http: httpx.AsyncClient, gateway: RunningGateway) -> None:
    image = documents.text_image(["hello"])
    response = await http.post(DOCS, files={"file": ("a.png", image)})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_file_type"
    big = b"word " * (2 * 1024 * 1024 + 1)  # just over 10 MB of text
    response = await http.post(DOCS, files={"file": ("big.txt", big)})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"  # the table's, not the JSON cap
    for query in ("page_size=0", "page_size=101", "status=done", "classification=x"):
        assert (await http.get(f"{DOCS}?{query}")).status_code == 400
    assert (await http.get(f"{DOCS}/nope/chunks?limit=501")).status_code == 400
    assert (await http.get(f"{DOCS}/{'0' * 8}")).status_code == 404


async def test_a_document_larger_than_the_json_body_cap_is_accepted(
    nursery: trio.Nursery, settings: Settings
) -> None:
    """The size table governs uploads, not `max_body_bytes` (8 MiB by default, which
    refused every data document between 8 MiB and the table's 10-50 MB)."""
    small_cap = attrs.evolve(settings, max_body_bytes=16 * 1024)
    running = await nursery.start(partial(run_gateway, small_cap, env={}))
    async with httpx.AsyncClient(base_url=running.url, headers=bearer(ADMIN_KEY)) as http:
        text = b"Plain words about owls and larks. " * 2000  # 68 KB
        created = await upload(http, "owls.txt", text)
        assert created["file_size_bytes"] == len(text)
        assert (await finished(http, created["id"]))["status"] == "completed"


async def test_residency_picks_a_provider_of_the_region_or_fails(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    us = await finished(http, (await upload(http, "u.txt", b"Hello.", residency_region="us"))["id"])
    assert us["status"] == "completed" and us["embedding_model"] == "text-embedding-3-small"
    nowhere = await upload(http, "a.txt", b"Hello.", residency_region="ap")
    failed = await finished(http, nowhere["id"])
    assert failed["status"] == "failed"
    assert "region 'ap'" in failed["error_message"]
    chunks = await http.get(f"{DOCS}/{nowhere['id']}/chunks")
    assert chunks.status_code == 422
    assert chunks.json()["error"]["code"] == "processing_failed"
    # A provider's region is a setting: OpenAI declared in `ap` now embeds `ap` documents.
    patched = await http.patch(
        "/v1/management/providers/openai", json={"settings": {"region": "ap"}}
    )
    assert patched.status_code == 200, patched.text
    again = await upload(http, "b.txt", b"Hello.", residency_region="ap")
    done = await finished(http, again["id"])
    assert done["status"] == "completed" and done["embedding_model"] == "text-embedding-3-small"


async def test_erasure_leaves_no_copy_on_disk(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    data_dir = gateway.state.settings.data_dir
    keep = await upload(http, "keep.md", b"# Other\n\nUnrelated words stay searchable.")
    secret = await upload(http, "secret.md", REPORT % CANARY.encode())
    for made in (keep, secret):
        assert (await finished(http, made["id"]))["status"] == "completed"
    assert canary_anywhere(data_dir)  # the scan sees it while it exists
    found = await http.post("/v1/data/search", json={"query": CANARY})
    assert [h["document_id"] for h in found.json()["data"]][:1] == [secret["id"]]

    erased = await http.delete(f"{DOCS}/{secret['id']}")
    assert erased.status_code == 200
    assert erased.json()["document_id"] == secret["id"]
    assert erased.json()["chunks_deleted"] == 2
    assert not canary_anywhere(data_dir)
    assert (await http.get(f"{DOCS}/{secret['id']}")).status_code == 404
    assert (await http.delete(f"{DOCS}/{secret['id']}")).status_code == 404
    found = await http.post("/v1/data/search", json={"query": CANARY + " unrelated"})
    assert {h["document_id"] for h in found.json()["data"]} == {keep["id"]}
    log = (await http.get("/v1/management/audit-log?type=data_document.erased")).json()
    assert [e["target"]["id"] for e in log["events"]] == [secret["id"]]


async def test_retention_expiry_erases_under_a_controlled_clock(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    import time

    data_dir = gateway.state.settings.data_dir
    made = await upload(http, "kept.md", REPORT % CANARY.encode(), retention_days="1")
    assert made["retention_days"] == 1
    assert (await finished(http, made["id"]))["status"] == "completed"
    now = time.time()
    assert await retention.sweep(gateway.state.documents_services, now=now + 86_400 - 60) == []
    assert canary_anywhere(data_dir)
    assert await retention.sweep(gateway.state.documents_services, now=now + 86_400 + 60) == [
        made["id"]
    ]
    assert not canary_anywhere(data_dir)
    assert (await http.get(f"{DOCS}/{made['id']}")).status_code == 404
    log = (await http.get("/v1/management/audit-log?type=data_document.erased")).json()
    assert log["events"][0]["target"]["id"] == made["id"]
    assert log["events"][0]["details"]["reason"] == "retention"


async def test_word_headings_become_section_headers(http: httpx.AsyncClient) -> None:
    """Word's heading styles are the document's sections (they were plain lines, and every
    chunk had no section_header)."""
    data = documents.docx(
        ["# Payment terms", "Invoices are due in thirty days.", "# Termination", "Either party"]
    )
    created = await upload(http, "contract.docx", data)
    assert (await finished(http, created["id"]))["status"] == "completed"
    page = (await http.get(f"{DOCS}/{created['id']}/chunks")).json()
    assert [(c["section_header"], c["content"]) for c in page["chunks"]] == [
        ("Payment terms", "# Payment terms\nInvoices are due in thirty days."),
        ("Termination", "# Termination\nEither party"),
    ]


async def test_a_word_97_document_is_read_page_by_page(http: httpx.AsyncClient) -> None:
    data = documents.word97(
        ["Tenancy agreement.\nThe tenant pays rent monthly.", "Signed by both parties."],
        compressed=False,
    )
    created = await upload(http, "lease.doc", data, chunking_strategy="paragraph")
    done = await finished(http, created["id"])
    assert done["status"] == "completed", done
    assert done["mime_type"] == "application/msword"
    page = (await http.get(f"{DOCS}/{created['id']}/chunks")).json()
    contents = [(c["page_number"], c["content"]) for c in page["chunks"]]
    assert contents[0] == (1, "Tenancy agreement.\nThe tenant pays rent monthly.\n1")
    assert contents[-1] == (2, "Signed by both parties.\n2")
    # An OLE file named .doc that is not a Word document fails with a reason.
    broken = data.replace(b"W\x00o\x00r\x00d\x00D\x00o\x00c", b"X\x00o\x00r\x00d\x00D\x00o\x00c")
    failed = await finished(http, (await upload(http, "other.doc", broken))["id"])
    assert failed["status"] == "failed"
    assert "no WordDocument stream" in failed["error_message"]
