"""Data documents for retrieval: ingestion (chunking, embedding within a residency region),
reads, erasure that leaves no copy, retention, and hybrid search."""
