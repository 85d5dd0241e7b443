"""OCR of documents and images (spec function 5): POST /v1/ocr."""
