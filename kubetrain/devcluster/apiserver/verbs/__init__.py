"""What each API verb does, independent of HTTP: the write path (core.py) and its admission
(admitting.py), DELETE (deletion.py), subresources (subresources.py, podlogs.py), LIST and
WATCH (reads.py, watchstream.py), server-side tables (tables.py) and CRD conversion
webhooks (conversion.py)."""
