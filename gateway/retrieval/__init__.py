"""Embeddings and rerank: the two retrieval endpoints, which share everything but their shapes.

Both take one model (plus optional explicit fallbacks), call one upstream operation under the
gateway's deadline, and answer JSON with a `service` object; neither streams. Validation is
pure (`embedding_input`, `rerank_input`); `serve` plans, admits and calls the upstream engine;
`embeddings` and `rerank` put the pieces together.
"""
