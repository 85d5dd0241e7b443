"""Text out of documents and into chunks, for files and data documents alike: extraction
(text layers, office formats, OCR of pages without one) and the chunking strategies."""

PAGE_SEPARATOR = "\n\n"  # between two pages' texts, wherever they are joined
