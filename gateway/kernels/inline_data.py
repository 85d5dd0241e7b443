"""Inline content in a request body, as the vendors take it: the patterns the chat and
Responses doors declare for a file part's `file_data` and an audio part's `data` (one
definition, so both doors refuse the same inputs and their documents say the same)."""

from __future__ import annotations

BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
"""Strict base64 (no whitespace, padded), as the vendors take it."""
DOCUMENT_DATA_URL = rf"data:(?:application/pdf|text/[-+.\w]+|image/[-+.\w]+);base64,{BASE64}"
"""A document part's `file_data`: a PDF, a text file or an image, inline."""
