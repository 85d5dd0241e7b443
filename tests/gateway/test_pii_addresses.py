"""US postal addresses in the PII scan (`gateway.kernels.pii.addresses`): real address shapes are
found whole, look-alikes are not, and an uploaded document's report shows them.

The White House's address was reported as "1600 Pennsylvania Avenue" alone (the NW, city,
state and ZIP code left out of the finding, so a redaction left them in the text), and
most other shapes (an ordinal street, a directional prefix, a suffix such as Loop or
Parkway, a PO box, a unit, a last line on its own line) were not found at all.
"""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.kernels.pii.detector import scan_text
from tests.gateway.test_files_api import processed, upload

ADDRESSES = [
    "1600 Pennsylvania Avenue NW, Washington, DC 20500",
    "350 5th Ave, New York, NY 10118",
    "1 Infinite Loop, Cupertino, CA 95014",
    "233 S Wacker Dr, Chicago, IL 60606",
    "1600 Amphitheatre Parkway, Mountain View, CA 94043",
    "4059 Mt Lee Dr., Hollywood, CA 90068",
    "600 N. Michigan Ave., Suite 300, Chicago, IL 60611-3902",
    "123 Main St Apt 4B, Boston, MA 02118",
    "1585 Broadway, New York, NY 10036",
    "2 15th St NW, Washington, D.C. 20024",
    "1600 PENNSYLVANIA AVE NW, WASHINGTON, DC 20500",
    "1 Microsoft Way\nRedmond, WA 98052",
    "PO Box 1234, Austin, TX 78701",
    "P.O. Box 5",
    "221B Baker Street",
    "742 Evergreen Terrace",
    "742 Evergreen Terrace Ave, Springfield, IL 62704",
    "500 S. Buena Vista Street, Burbank, CA 91521",
    "Springfield, IL 62704",
    "St. Louis, MO 63101",
    "450 O'Farrell St, San Francisco, CA 94102",
    "450 O\u2019Farrell St, San Francisco, CA 94102",
]
# Sentences around them, as documents hold them.
AROUND = ("Ship to {}.", "Our office at {} Then We Drive home", "{}")

NOT_ADDRESSES = [
    "Revenue grew 12 Percent in the Pacific Northwest this quarter.",
    "Room 101 is on the 3rd Floor of the annex.",
    "On March 3, 2024 Park Avenue was closed for the parade.",
    "Washington, DC is the capital; Chicago, IL has a lake.",
    "Order 12345 shipped on 2024-01-05 to the warehouse.",
    "Meet at Gate 12, Terminal B, at 9 AM Pacific Time.",
    "Chapter 7 Court Order was filed; see Section 4 Main Rules.",
    "The score was 3 to 1 after 90 minutes.",
    "He walked 26 miles down Main Street.",
    "ISO 9001 certified; version 2 Release Notes follow.",
    "Invoice 4711 for Jane Doe, total $1600 paid.",
]


def addresses_in(text: str) -> list[str]:
    return [text[s:e] for kind, s, e, _ in scan_text(text) if kind == "postal_address"]


@pytest.mark.parametrize("address", ADDRESSES)
def test_an_address_is_found_whole(address: str) -> None:
    for sentence in AROUND:
        text = sentence.format(address)
        assert addresses_in(text) == [address], text


@pytest.mark.parametrize("text", NOT_ADDRESSES)
def test_look_alikes_are_not_addresses(text: str) -> None:
    assert addresses_in(text) == []


async def test_an_uploaded_documents_report_holds_its_addresses(http: httpx.AsyncClient) -> None:
    text = (
        "Visitors' guide.\n\nThe White House is at 1600 Pennsylvania Avenue NW, Washington, "
        "DC 20500. Write to PO Box 1234, Austin, TX 78701 for tickets.\n"
    )
    made = await upload(
        http, "guide.txt", text.encode(), service=json.dumps({"process": True, "detect_pii": True})
    )
    assert made.status_code == 200, made.text
    file_id = made.json()["id"]
    assert (await processed(http, file_id))["status"] == "processed"
    full = (await http.get(f"/v1/files/{file_id}/text")).json()["text"]
    report = (await http.get(f"/v1/files/{file_id}/pii")).json()
    found = [
        full[f["location"]["start"] : f["location"]["end"]]
        for f in report["findings"]
        if f["type"] == "postal_address"
    ]
    assert found == [
        "1600 Pennsylvania Avenue NW, Washington, DC 20500",
        "PO Box 1234, Austin, TX 78701",
    ]
    assert report["summary"]["postal_address"] == 2
