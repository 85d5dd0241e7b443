"""The routing engine: routing rules (matching, validation, the in-memory rule book).

Everything here except the rule book's loading is pure and synchronous.
"""
