"""US postal addresses in running text: a pattern recognizer of our own. Pure.

Street addresses are one of HIPAA's Safe Harbor identifiers, and neither Presidio's
offline recognizers nor spaCy's small model find them. The grammar follows the USPS's
(Publication 28) shape of an address line, in the spellings letters and forms use:

- a house number (`1600`, `221B`, `12-14`), an optional pre-directional (`N`, `S.`,
  `North`), one to four words of street name (`Pennsylvania`, `5th`, `Mt Lee`,
  `O'Farrell`, or in capitals; the fewest that reach a suffix, so that a sentence going on
  after the address is not taken in), a street suffix (`Street`/`St`, `Avenue`/`Ave`,
  `Parkway`, `Loop`..., or two: `Evergreen Terrace Ave`; or the suffix-less `Broadway`),
  an optional post-directional (`NW`);
- or a post office box (`PO Box 1234`, `P.O. Box 5`);
- then optionally a unit (`Apt 4B`, `Suite 300`, `# 12`), and the last line: city, state
  or territory code, ZIP or ZIP+4 (`Washington, DC 20500`), after a comma or a line break;
- a last line alone (`Springfield, IL 62704`) is reported too: a city with its ZIP code is
  a geographic subdivision smaller than a state, which Safe Harbor also removes.

One finding spans the whole address, so a redaction leaves nothing of it. What must not
match (`tests/gateway/test_pii_addresses.py`): numbers followed by common words ("12
Percent"), ordinals ("3rd Floor"), a year after a date ("March 3, 2024 Park Avenue"), a
city and state without ZIP ("Washington, DC is"), a ZIP-like number alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_STATE_CODES = (
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ "
    "NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR VI GU AS MP AA AE AP"
)
_STREET_SUFFIXES = (
    "Street St Avenue Ave Av Road Rd Boulevard Blvd Lane Ln Drive Dr Court Ct Way Place Pl "
    "Parkway Pkwy Terrace Ter Circle Cir Highway Hwy Loop Square Sq Trail Trl Plaza Plz Alley "
    "Aly Crescent Expressway Expy Freeway Fwy Pike Row Path Walk Ridge Center Ctr Turnpike "
    "Tpke Causeway Heights Hts Mall"
)
STATES, SUFFIXES = _STATE_CODES.split(), _STREET_SUFFIXES.split()

_DIRECTION = r"(?:[NSEW]|[NS][EW]|North|South|East|West|NORTH|SOUTH|EAST|WEST)\.?"
_NAME_WORD = r"[A-Z](?:[a-z]+|(?=['\u2019]))(?:['\u2019-][A-Za-z]+)?\.?"  # Mt., O'Farrell
_WORD = rf"(?:{_NAME_WORD}|[A-Z]{{2,}}|\d{{1,3}}(?:st|nd|rd|th|ST|ND|RD|TH))"
_SUFFIX = r"(?i:" + "|".join(SUFFIXES) + r")\b\.?"
_NUMBER = r"(?<!\d, )(?<![$#€£])\b\d{1,6}[A-Z]?(?:-\d{1,4})?"
_STREET = (
    rf"{_NUMBER} (?:{_DIRECTION} )?"
    rf"(?:(?:{_WORD} ){{1,4}}?{_SUFFIX}(?: {_SUFFIX})?|Broadway\b|BROADWAY\b)"
    rf"(?: {_DIRECTION}(?![\w]))?"
)
_PO_BOX = r"\b(?:P\.? ?O\.?|Post Office) (?i:box) \d{1,6}\b"
_UNIT = r"(?:,? (?:(?i:apt|apartment|suite|ste|unit|fl|floor|rm|room|bldg)\.? ?|# ?)[A-Za-z0-9-]+)"
_CITY_WORD = r"(?:[A-Z][a-z]+\.?|[A-Z]{2,})"
_LAST_LINE = (
    rf"{_CITY_WORD}(?:[ -]{_CITY_WORD}){{0,2}},? (?:{'|'.join(STATES)}|D\.C\.) "
    r"\d{5}(?:-\d{4})?\b"
)
_BREAK = r"(?:, ?|,? ?\n[ \t]*)"
ADDRESS = re.compile(rf"(?:{_STREET}|{_PO_BOX}){_UNIT}?(?:{_BREAK}{_LAST_LINE})?|\b{_LAST_LINE}")
FULL_SCORE, STREET_SCORE = 0.85, 0.75


def find(text: str) -> Iterator[tuple[int, int, float]]:
    """(start, end, score) of every address in `text`: surer with a state and ZIP code."""
    for match in ADDRESS.finditer(text):
        found = match.group(0).rstrip(".,")
        whole = re.search(r"\d{5}(?:-\d{4})?$", found) is not None
        yield match.start(), match.start() + len(found), FULL_SCORE if whole else STREET_SCORE
