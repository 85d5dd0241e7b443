"""Shared by every family that takes uploads (files, OCR): the streamed multipart receiver,
types by magic bytes with the spec's size table, and the integrity checks."""
